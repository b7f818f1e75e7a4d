"""``ClaudeCodeModel``: a pydantic-ai model that runs Claude through the Claude Code CLI."""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import CLINotFoundError as SDKCLINotFoundError
from claude_agent_sdk import McpSdkServerConfig, ResultMessage
from claude_agent_sdk import ProcessError as SDKProcessError
from claude_agent_sdk.types import Message, SessionStore
from pydantic_ai import _utils
from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponseStreamEvent, TextPart
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec
from pydantic_ai.profiles.anthropic import anthropic_model_profile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext, ToolDefinition

from claudecode_model import _history
from claudecode_model._agent_tools import (
    AGENT_TOOLS_SERVER,
    OUTPUT_TOOLS_SERVER,
    RunToolRouter,
    agent_tool_specs,
    output_tool_specs,
    tools_signature,
)
from claudecode_model._cli_discovery import find_cli
from claudecode_model._history import HISTORY_DIGEST_KEY, PROVIDER_NAME, TurnPlan, plan_turn
from claudecode_model._options import RequestNeeds, build_options
from claudecode_model._replay import write_replay_transcript
from claudecode_model._resume import (
    TRANSCRIPT_LEAF_KEY,
    mirror_transcript,
    recorded_leaf,
    resume_point,
    transcript_leaf,
)
from claudecode_model._run_context import current_run_context
from claudecode_model._session import CLISession, SessionPool
from claudecode_model._tool_servers import (
    ResolvedTransport,
    ServedTools,
    checked_transport,
    registered_tool_specs,
    resolve_transport,
    serve_tools,
)
from claudecode_model._translate import TurnTranslator
from claudecode_model.exceptions import (
    ClaudeCodeConnectionError,
    ClaudeCodeError,
    CLIInterruptedError,
    CLINotFoundError,
    CLIProcessError,
    CLITimeoutError,
    StructuredOutputError,
    api_error_for_status,
)
from claudecode_model.ipc._types import TransportType
from claudecode_model.mcp_integration import create_mcp_server_from_tools, filter_tools_for_request
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.stores._common import checked_session_store

__all__ = ["ClaudeCodeModel", "ClaudeCodeResponse", "ClaudeCodeStreamedResponse"]

logger = logging.getLogger(__name__)

_STDERR_LINES = 50
_LIVE_MODELS: weakref.WeakSet[ClaudeCodeModel] = weakref.WeakSet()


@dataclass
class ClaudeCodeResponse:
    """A model response together with everything the CLI reported about the turn."""

    response: ModelResponse
    result: ResultMessage | None
    init: dict[str, Any]
    messages: list[Message]


class ClaudeCodeModel(Model):
    """A pydantic-ai model that runs Claude through the Claude Code CLI.

    It uses the CLI's own login (no API key needed), lets Claude Code run the agent loop, and keeps the pydantic-ai
    contract: system prompts and instructions, message history (continuing CLI sessions where possible), streaming,
    usage and cost, typed errors.

    Example:
        ```python
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel

        agent = Agent(ClaudeCodeModel(), instructions="Be concise.")
        print(agent.run_sync("What is the capital of France?").output)
        ```
    """

    def __init__(
        self,
        model_name: str | None = None,
        *,
        cli_path: str | os.PathLike[str] | None = None,
        settings: ClaudeCodeModelSettings | None = None,
        profile: ModelProfileSpec | None = None,
        env: dict[str, str] | None = None,
        keep_sessions: int = 4,
        session_idle_timeout: float = 300.0,
        tool_transport: TransportType = "auto",
        session_store: SessionStore | None = None,
    ) -> None:
        """Create a Claude Code model.

        Args:
            model_name: The Claude model (``"sonnet"``, ``"opus"``, a full model id), or ``None`` for the CLI's default.
            cli_path: Path to the ``claude`` binary; by default the CLI bundled in claude-agent-sdk, then ``PATH``.
            settings: Default settings for every request (see :class:`ClaudeCodeModelSettings`).
            profile: A model profile; by default pydantic-ai's Anthropic profile with native structured output.
            env: Extra environment variables for every CLI process.
            keep_sessions: How many idle CLI processes to keep for fast follow-up turns (0 disables).
            session_idle_timeout: Seconds after which an idle CLI process is stopped.
            tool_transport: How the agent's tools reach the CLI: ``"sdk"`` (an in-process MCP server),
                ``"stdio"`` (the IPC bridge, a separate process) or ``"auto"`` (the best one the installed CLI
                supports: in-process for Claude Code 2.0 and later).
            session_store: Where CLI session transcripts are mirrored (claude-agent-sdk's ``SessionStore``, e.g.
                :class:`~claudecode_model.PostgresSessionStore`): a follow-up turn on another worker (another
                process, machine or ``CLAUDE_CONFIG_DIR``) then resumes the session from the store instead of
                replaying the history. Workers must share the store and the working directory.
        """
        self._model_name = model_name
        self._cli_path_option = cli_path
        self._cli_path: Path | None = None
        self._env = dict(env or {})
        self._pool = SessionPool(max_idle=keep_sessions, idle_timeout=session_idle_timeout)
        self._session_costs: dict[str, float] = {}
        self._registered_toolsets: Any = None
        self._server_name = AGENT_TOOLS_SERVER
        self._tool_transport = checked_transport(tool_transport)
        self._registered_transport: TransportType = "auto"
        self._session_store = checked_session_store(session_store)
        super().__init__(settings=settings, profile=profile or _default_profile(model_name))
        _LIVE_MODELS.add(self)

    # --- pydantic-ai Model interface ------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The model name (``"default"`` when the CLI chooses)."""
        return self._model_name or "default"

    @property
    def system(self) -> str:
        """The provider name used by pydantic-ai's instrumentation."""
        return PROVIDER_NAME

    @property
    def cli_path(self) -> Path:
        """The CLI binary this model runs (found on first use)."""
        if self._cli_path is None:
            self._cli_path = find_cli(self._cli_path_option)
        return self._cli_path

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Run one turn through the CLI and return the complete response."""
        async with self.request_stream(messages, model_settings, model_request_parameters) as stream:
            async for _ in stream:
                pass
        return stream.get()

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Run one turn through the CLI, streaming text, thinking and tool events as they arrive."""
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        turn = await self._start_turn(messages, cast("ClaudeCodeModelSettings", settings or {}), params, run_context)
        stream = ClaudeCodeStreamedResponse(model_request_parameters=params, _turn=turn)
        try:
            yield stream
        finally:
            await turn.finish()

    # --- extra entry points ---------------------------------------------------------------------------------

    async def request_with_metadata(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None = None,
        model_request_parameters: ModelRequestParameters | None = None,
    ) -> ClaudeCodeResponse:
        """Like :meth:`request`, also returning the CLI's result message, init data and raw messages."""
        params = model_request_parameters or ModelRequestParameters()
        async with self.request_stream(messages, model_settings, params) as stream:
            async for _ in stream:
                pass
        assert isinstance(stream, ClaudeCodeStreamedResponse)
        turn = stream.turn
        return ClaudeCodeResponse(
            response=stream.get(),
            result=turn.translator.outcome.result,
            init=turn.translator.outcome.init_data,
            messages=list(turn.raw_messages),
        )

    async def stream_messages(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None = None,
        model_request_parameters: ModelRequestParameters | None = None,
    ) -> AsyncIterator[Message]:
        """Run one turn and yield the raw claude-agent-sdk messages as they arrive."""
        params = model_request_parameters or ModelRequestParameters()
        settings, params = self.prepare_request(model_settings, params)
        turn = await self._start_turn(messages, cast("ClaudeCodeModelSettings", settings or {}), params)
        try:
            async for message in turn.messages():
                for _ in turn.translator.feed(message):
                    pass
                yield message
        finally:
            await turn.finish()

    def set_agent_toolsets(
        self, toolsets: Any, *, server_name: str = AGENT_TOOLS_SERVER, transport: TransportType = "auto"
    ) -> None:
        """Register pydantic-ai toolsets (e.g. ``agent._function_toolset``) to serve as Claude Code MCP tools.

        This is the explicit API of the tool specification. It is optional: without it, an agent's tools are
        exposed automatically and run through the run's own tool machinery (validation, retries, real deps).
        Registered tools are converted with :func:`~claudecode_model.convert_tool` and called without a run
        context. ``transport`` chooses how they reach the CLI: ``"sdk"`` (in-process MCP server), ``"stdio"``
        (the IPC bridge) or ``"auto"`` (see ``tool_transport`` of the constructor). Calling it again replaces
        the previous registration (with a warning).
        """
        checked = checked_transport(transport)
        if self._registered_toolsets is not None:
            logger.warning("set_agent_toolsets() replaces the toolsets registered before")
        self._registered_toolsets = toolsets
        self._server_name = server_name
        self._registered_transport = checked

    def _process_function_tools(self, function_tool_names: list[str]) -> McpSdkServerConfig | None:
        """Build the MCP server holding only the registered tools this request names."""
        tools = filter_tools_for_request(self._registered_toolsets, function_tool_names)
        if not tools:
            return None
        return create_mcp_server_from_tools(tools, self._server_name)

    async def aclose(self) -> None:
        """Stop every CLI process this model keeps for follow-up turns."""
        await self._pool.close_all()

    async def __aexit__(self, *args: Any) -> bool | None:
        await self.aclose()
        return await super().__aexit__(*args)

    # --- internals ------------------------------------------------------------------------------------------

    async def _start_turn(
        self,
        messages: list[ModelMessage],
        settings: ClaudeCodeModelSettings,
        params: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> _Turn:
        await self._pool.prune()
        instructions = _instructions(messages, params)
        plan = plan_turn(messages, instructions, allow_continue=settings.get("claude_code_session", "auto") == "auto")
        cli_path = self.cli_path
        needs = RequestNeeds(
            system_prompt=plan.system_prompt, output_schema=_native_output_schema(params), thinking=params.thinking
        )
        servers = self._plan_tool_servers(params, cli_path)
        runs_agent_tools = any(server.registered is None and server.function_defs for server in servers)
        for server in servers:
            needs.allowed_tools.append(f"mcp__{server.name}")
        if servers:
            needs.mcp_tools_signature = [server.signature for server in servers]
        if runs_agent_tools:
            run_context = run_context or current_run_context()
            if run_context is None:
                raise ClaudeCodeError(
                    "This request carries function tools but no agent run context: run the model through an "
                    "Agent, or register the tools with set_agent_toolsets()."
                )
        stderr_lines: deque[str] = deque(maxlen=_STDERR_LINES)
        base_env = {**self._env}

        _, signature = build_options(
            model_name=self._model_name,
            cli_path=cli_path,
            settings=settings,
            needs=needs,
            base_env=base_env,
            stderr=stderr_lines.append,
        )
        session: CLISession | None = None
        replay_env = {**os.environ, **base_env, **settings.get("claude_code_env", {})}
        cwd = settings.get("claude_code_cwd")
        if plan.continue_session_id is not None and plan.history_digest is not None:
            session = self._pool.take(plan.continue_session_id, signature=signature, digest=plan.history_digest)
            if session is None:
                point = await resume_point(
                    plan.continue_session_id,
                    recorded_leaf(messages),
                    store=self._session_store,
                    env=replay_env,
                    cwd=cwd,
                )
                if point is None:  # the session is nowhere to be found: replay the history into a new one
                    plan = plan_turn(messages, instructions, allow_continue=False)
                else:
                    needs.resume, needs.resume_at, needs.fork = point.session_id, point.at, point.fork
        if session is None and needs.resume is None and plan.replay:
            needs.resume = write_replay_transcript(plan.replay, env=replay_env, cwd=cwd)
            if self._session_store is not None:
                await mirror_transcript(self._session_store, needs.resume, env=replay_env, cwd=cwd)
        router = session.tool_router if session is not None else RunToolRouter()
        router.bind(run_context if runs_agent_tools else None)
        if session is None:
            session = await self._start_session(settings, needs, signature, servers, router, stderr_lines)
        return _Turn(
            model=self,
            session=session,
            plan=plan,
            messages_in=messages,
            params=params,
            timeout=_turn_timeout(settings),
            stderr=stderr_lines,
            tool_prefixes=tuple(f"mcp__{server.name}__" for server in servers),
            output_tool_names=frozenset(
                f"mcp__{server.name}__{tool.name}" for server in servers for tool in server.output_defs
            ),
            wants_structured_output=needs.output_schema is not None,
            router=router,
        )

    def _plan_tool_servers(self, params: ModelRequestParameters, cli_path: Path) -> list[_ToolServerPlan]:
        """The MCP servers this request needs: which tools each serves, and over which transport."""
        function_defs = list(params.function_tools)
        output_defs = list(params.output_tools)
        if self._registered_toolsets is None:
            if not function_defs and not output_defs:
                return []
            transport = resolve_transport(self._tool_transport, cli_path)
            return [_ToolServerPlan(AGENT_TOOLS_SERVER, transport, function_defs, output_defs)]
        transport = resolve_transport(self._registered_transport, cli_path)
        servers = []
        # Validates the names now (ToolNotFoundError, ToolsetNotRegisteredError), before any process starts.
        registered = filter_tools_for_request(self._registered_toolsets, [tool.name for tool in function_defs])
        if registered:
            servers.append(
                _ToolServerPlan(
                    self._server_name,
                    transport,
                    function_defs,
                    [],
                    registered=registered,
                    registry=self._registered_toolsets,
                )
            )
        if output_defs:
            servers.append(_ToolServerPlan(OUTPUT_TOOLS_SERVER, transport, [], output_defs))
        return servers

    async def _start_session(
        self,
        settings: ClaudeCodeModelSettings,
        needs: RequestNeeds,
        signature: str,
        servers: list[_ToolServerPlan],
        router: RunToolRouter,
        stderr_lines: deque[str],
    ) -> CLISession:
        """Serve the request's tools and start a CLI process for it."""
        served: list[ServedTools] = []
        env = {**self._env}
        try:
            for server in servers:
                served.append(await self._serve_tools(server, router))
                needs.mcp_servers[server.name] = served[-1].config
                env.update(served[-1].cli_env)
        except BaseException:
            for started in served:
                await started.stop()
            raise
        options, _ = build_options(
            model_name=self._model_name,
            cli_path=self.cli_path,
            settings=settings,
            needs=needs,
            base_env=env,
            stderr=stderr_lines.append,
        )
        options = replace(options, session_store=self._session_store)
        # The session keeps the signature computed without per-process values (such as the IPC secret).
        session = CLISession(options, signature=signature)
        session.tool_router = router
        session.tool_servers = served
        router.stop_turn = session.interrupt_soon
        try:
            await session.start()
        except BaseException as error:
            raise self._map_error(error, None, stderr_lines) from error
        return session

    async def _serve_tools(self, server: _ToolServerPlan, router: RunToolRouter) -> ServedTools:
        if server.registered is None:
            specs = agent_tool_specs(server.function_defs, router) + output_tool_specs(server.output_defs, router)
            return await serve_tools(server.name, specs, server.transport)
        if server.transport == "sdk":
            config = self._process_function_tools([tool.name for tool in server.function_defs])
            assert config is not None
            return ServedTools(config=config)
        return await serve_tools(server.name, registered_tool_specs(server.registered), server.transport)

    def _settings_overriding_thinking(self, model_settings: Mapping[str, object]) -> tuple[str, ...]:
        """``claude_code_thinking`` takes precedence over the unified ``thinking`` setting."""
        return ("claude_code_thinking",) if "claude_code_thinking" in model_settings else ()

    def _overrides_unified_effort(self, model_settings: Mapping[str, object]) -> bool:
        """``claude_code_effort`` replaces the effort a unified ``thinking`` level maps to."""
        return "claude_code_effort" in model_settings

    def _map_error(self, error: BaseException, translator: TurnTranslator | None, stderr: deque[str]) -> BaseException:
        """Turn SDK exceptions and error results into this library's typed errors."""
        if isinstance(error, ClaudeCodeError) or not isinstance(error, Exception):
            return error  # ours already, or cancellation, GeneratorExit, KeyboardInterrupt
        if isinstance(error, SDKCLINotFoundError):
            return CLINotFoundError(str(error))
        if translator is not None:
            api_error = self._api_error(translator)
            if api_error is not None:
                return api_error
        if isinstance(error, SDKProcessError):
            stderr_text = "\n".join(stderr) or error.stderr
            return CLIProcessError(
                f"Claude Code CLI failed: {error}" + (f"\n{stderr_text}" if stderr_text else ""),
                exit_code=error.exit_code,
                stderr=stderr_text,
            )
        return CLIProcessError(f"Claude Code CLI failed: {error!r}")

    def _api_error(self, translator: TurnTranslator) -> BaseException | None:
        outcome = translator.outcome
        result = outcome.result
        status = result.api_error_status if result is not None else None
        message = outcome.api_error_text or (result.result if result is not None else None) or ""
        result_data = _result_dict(result)
        if status is not None:
            return api_error_for_status(status, self.model_name, message, cli_message=message, result=result_data)
        if outcome.api_error_kind is not None or (result is not None and result.terminal_reason == "api_error"):
            return ClaudeCodeConnectionError(self.model_name, message or "Claude Code could not reach the API")
        return None

    def _result_error(self, translator: TurnTranslator) -> BaseException | None:
        result = translator.outcome.result
        if result is None:
            return CLIProcessError("Claude Code ended the turn without a result")
        if not result.is_error and result.subtype == "success":
            return None
        api_error = self._api_error(translator)
        if api_error is not None:
            return api_error
        if result.terminal_reason in ("aborted_streaming", "aborted_tools"):
            return CLIInterruptedError(f"Claude Code turn was interrupted ({result.terminal_reason})")
        detail = "; ".join(result.errors or []) or result.result or result.subtype
        return CLIProcessError(f"Claude Code turn failed ({result.subtype}, {result.terminal_reason}): {detail}")


@dataclass
class _ToolServerPlan:
    """One MCP server of a request: the run's own tools (``registered is None``) or registered toolsets."""

    name: str
    transport: ResolvedTransport
    function_defs: list[ToolDefinition]
    output_defs: list[ToolDefinition]
    registered: list[Any] | None = None
    registry: Any = None
    """The toolsets given to ``set_agent_toolsets`` (a new registration needs a new CLI session)."""

    @property
    def signature(self) -> list[Any]:
        kind = "run" if self.registered is None else "registered"
        tools = tools_signature(self.function_defs + self.output_defs)
        return [kind, self.name, self.transport, tools, id(self.registry) if self.registry is not None else None]


def _default_profile(model_name: str | None) -> ModelProfile:
    base = anthropic_model_profile(model_name or "claude-sonnet-4-5") or ModelProfile()
    return {**base, "supports_json_schema_output": True, "default_structured_output_mode": "native"}


def _instructions(messages: list[ModelMessage], params: ModelRequestParameters) -> str | None:
    from pydantic_ai._instrumentation import get_instructions

    return get_instructions(messages, params)


def _turn_timeout(settings: ClaudeCodeModelSettings) -> float | None:
    explicit = settings.get("claude_code_timeout")
    if explicit is not None:
        return float(explicit)
    standard = settings.get("timeout")
    return float(standard) if isinstance(standard, int | float) else None


def _native_output_schema(params: ModelRequestParameters) -> dict[str, Any] | None:
    if params.output_mode != "native" or params.output_object is None:
        return None
    return dict(params.output_object.json_schema)


def _result_dict(result: ResultMessage | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return cast("dict[str, Any]", json.loads(json.dumps(result.__dict__, default=str)))


@dataclass
class _Turn:
    """One request in flight: a session, the translator of its messages, and the cleanup owed at the end."""

    model: ClaudeCodeModel
    session: CLISession
    plan: TurnPlan
    messages_in: list[ModelMessage]
    params: ModelRequestParameters
    timeout: float | None
    stderr: deque[str]
    tool_prefixes: tuple[str, ...]
    router: RunToolRouter
    wants_structured_output: bool
    output_tool_names: frozenset[str] = frozenset()
    translator: TurnTranslator = field(init=False)
    raw_messages: list[Message] = field(default_factory=list)
    completed: bool = False
    failed: bool = False

    def bind(self, parts_manager: Any) -> TurnTranslator:
        self.translator = TurnTranslator(
            parts_manager, tool_prefixes=self.tool_prefixes, output_tool_names=self.output_tool_names
        )
        return self.translator

    def user_message(self) -> dict[str, Any]:
        return {
            "type": "user",
            "message": {"role": "user", "content": self.plan.new_input},
            "parent_tool_use_id": None,
            "uuid": str(uuid.uuid4()),
        }

    async def messages(self) -> AsyncIterator[Message]:
        """The SDK messages of this turn, with the timeout and error mapping applied."""
        if not hasattr(self, "translator"):
            from pydantic_ai._parts_manager import ModelResponsePartsManager

            self.bind(ModelResponsePartsManager(model_request_parameters=self.params))
        try:
            async with asyncio.timeout(self.timeout):
                async for message in self.session.run_turn(self.user_message()):
                    self.raw_messages.append(message)
                    yield message
        except TimeoutError as error:
            self.failed = True
            raise CLITimeoutError(
                f"Claude Code did not finish within {self.timeout:g} s; the CLI was stopped",
                timeout=self.timeout or 0,
            ) from error
        except BaseException as error:
            self.failed = True
            if self.router.fatal_error is not None and isinstance(error, Exception):
                raise self.router.fatal_error from error
            mapped = self.model._map_error(error, self.translator, self.stderr)
            if mapped is error:
                raise
            raise mapped from error
        if self.router.fatal_error is not None:
            self.failed = True
            raise self.router.fatal_error
        if self.router.output_call is not None:
            # Stopped on purpose at the output tool call: pydantic-ai validates it; the session stays usable.
            self.completed = True
            return
        result_error = self.model._result_error(self.translator)
        if result_error is not None:
            self.failed = True
            raise result_error
        self.completed = True

    async def finish(self) -> None:
        """Keep the session for the next turn if it ended cleanly, otherwise stop the CLI."""
        if not self.completed or self.failed:
            await self.session.abort()
            return
        await self.model._pool.put(self.session)

    def previous_cost(self) -> float | None:
        session_id = self.translator.outcome.session_id
        return self.model._session_costs.get(session_id) if session_id else None

    def record_cost(self) -> None:
        result = self.translator.outcome.result
        if result is not None and result.total_cost_usd is not None:
            self.model._session_costs[result.session_id] = result.total_cost_usd


@dataclass
class ClaudeCodeStreamedResponse(StreamedResponse):
    """Streamed response of a Claude Code turn: true token streaming from the CLI's partial messages."""

    _turn: _Turn
    _timestamp: datetime = field(default_factory=_utils.now_utc)
    _closed: bool = field(default=False, init=False)

    @property
    def turn(self) -> _Turn:
        return self._turn

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        turn = self._turn
        translator = turn.bind(self._parts_manager)
        async for message in turn.messages():
            if self._closed:
                return
            for event in translator.feed(message):
                yield event
                if self._closed:  # nothing after cancel(): the response was recorded as it stood
                    return
        if turn.wants_structured_output:
            structured = translator.outcome.result.structured_output if translator.outcome.result else None
            if structured is None:
                raise StructuredOutputError(
                    "Claude Code finished without producing the structured output the request asked for"
                )
            # Native output is read from the text after the last tool call: the validated JSON the CLI returned.
            part = TextPart(json.dumps(structured, ensure_ascii=False))
            yield self._parts_manager.handle_part(vendor_part_id="structured_output", part=part)
        self._finalise(translator)

    def _finalise(self, translator: TurnTranslator) -> None:
        turn = self._turn
        self._usage = translator.usage(turn.previous_cost())
        turn.record_cost()
        self.finish_reason = "tool_call" if turn.router.output_call is not None else translator.finish_reason()
        details = translator.provider_details()
        session_id = translator.outcome.session_id
        self.provider_response_id = translator.outcome.result.uuid if translator.outcome.result else None
        if session_id is not None:
            response = ModelResponse(parts=self._parts_manager.get_parts())
            digest = _history.history_digest([*turn.messages_in, response])
            details[HISTORY_DIGEST_KEY] = digest
            if (leaf := transcript_leaf(turn.raw_messages)) is not None:
                details[TRANSCRIPT_LEAF_KEY] = leaf
            turn.session.seen_digest = digest
        self.provider_details = details

    async def close_stream(self) -> None:
        """Stop the CLI turn (used by ``cancel()``): the session is not reused."""
        # Set here, not read from ``cancelled``: wrappers (pydantic-ai's continuation stream) call this directly.
        self._closed = True
        self._turn.failed = True
        await self._turn.session.abort()

    def get_stream_cancel_errors(self) -> tuple[type[BaseException], ...]:
        """The error a turn stopped by :meth:`close_stream` ends with (suppressed after ``cancel()``)."""
        return (CLIInterruptedError,)

    @property
    def model_name(self) -> str:
        """The model the CLI used (from its init message), else the name the model was created with."""
        used = self._turn.translator.outcome.init_data.get("model") if hasattr(self._turn, "translator") else None
        return used if isinstance(used, str) and used else self._turn.model.model_name

    @property
    def provider_name(self) -> str:
        return PROVIDER_NAME

    @property
    def provider_url(self) -> str | None:
        return None

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


@atexit.register
def _kill_sessions_at_exit() -> None:
    for model in list(_LIVE_MODELS):
        model._pool.kill_all()
