"""``ClaudeCodeModel``: a pydantic-ai model that runs Claude through the Claude Code CLI.

This module keeps the pydantic-ai contract only; a request's CLI turn is run by :mod:`claudecode_model._turn`.
claude-agent-sdk and mcp (about a second of imports) are imported at the first request, not with this module.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ModelResponseStreamEvent, TextPart
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec
from pydantic_ai.profiles.anthropic import anthropic_model_profile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from claudecode_model._details import PROVIDER_NAME
from claudecode_model._execution import ToolExecution, checked_tool_execution
from claudecode_model._exit import close_blocking, track
from claudecode_model._history_repair import repair_history
from claudecode_model._settings_check import check_model_arguments, check_request_settings
from claudecode_model.exceptions import ClaudeCodeSettingsError, CLIInterruptedError
from claudecode_model.ipc._types import TransportType
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.stores._check import checked_session_store

if TYPE_CHECKING:
    from claude_agent_sdk import McpSdkServerConfig, ResultMessage
    from claude_agent_sdk.types import Message, SessionStore
    from pydantic_ai.agent import AbstractAgent

    from claudecode_model._compat import ModelResponsePartsManager
    from claudecode_model._parked import ParkingLot
    from claudecode_model._request_tools import ToolSetup
    from claudecode_model._session import CLISession, SessionPool
    from claudecode_model._slots import ProcessSlots
    from claudecode_model._turn import CLITurn, TurnRunner

DEFAULT_SERVER_NAME = "pydantic_tools"
"""The MCP server name of registered toolsets (``claudecode_model.DEFAULT_SERVER_NAME``; kept here so that
importing the model does not import mcp)."""

__all__ = ["ClaudeCodeModel", "ClaudeCodeResponse", "ClaudeCodeStreamedResponse"]

logger = logging.getLogger(__name__)

DEFAULT_KEEP_SESSIONS = 4
SURPLUS_IDLE_SECONDS = 60.0
"""How long idle sessions beyond the default ``keep_sessions`` are kept (while no new process needs their slot)."""
SPARES_PER_SIGNATURE_TOTAL = 4
"""The total cap on spares is this many times ``spare_sessions``."""

_PREWARMING: ContextVar[list[bool] | None] = ContextVar("claudecode_model_prewarming", default=None)
"""Set by :meth:`ClaudeCodeModel.prewarm` while it runs the agent: the request starts a spare instead of a turn."""


class _Prewarmed(Exception):
    """Ends the agent run :meth:`ClaudeCodeModel.prewarm` started, once the spare is ready."""


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
        keep_sessions: int | None = None,
        session_idle_timeout: float = 300.0,
        tool_transport: TransportType = "auto",
        spare_sessions: int = 1,
        max_processes: int | None = None,
        tool_execution: ToolExecution = "agent",
        session_store: SessionStore | None = None,
    ) -> None:
        """Create a Claude Code model.

        Args:
            model_name: The Claude model (``"sonnet"``, ``"opus"``, a full model id), or ``None`` for the CLI's default.
            cli_path: Path to the ``claude`` binary; by default the CLI bundled in claude-agent-sdk, then ``PATH``.
            settings: Default settings for every request (see :class:`ClaudeCodeModelSettings`).
            profile: A model profile; by default pydantic-ai's Anthropic profile with native structured output.
            env: Extra environment variables for every CLI process.
            keep_sessions: How many idle CLI processes to keep for fast follow-up turns (0 disables). By default
                4, and more (within ``max_processes``) for 60 s while no new process needs their slot, so that the
                follow-ups of many concurrent conversations find their processes; an explicit number is a hard
                bound.
            session_idle_timeout: Seconds after which an idle CLI process is stopped.
            tool_transport: How the agent's tools reach the CLI: ``"sdk"`` (an in-process MCP server),
                ``"stdio"`` (the IPC bridge, a separate process) or ``"auto"`` (the best one the installed CLI
                supports: in-process for Claude Code 2.0 and later).
            spare_sessions: How many CLI processes to start ahead, per session signature (system prompt, tools,
                settings), for the next new conversation: after a request starts a new conversation, and with
                :meth:`prewarm`. A new conversation claims a ready spare instead of waiting for a CLI to start.
                Spares are stopped after ``session_idle_timeout`` unused, and with the model. 0 disables.
            max_processes: The most CLI processes this model runs at once (busy, kept and spare together); a
                request beyond it waits for one to end, within its timeout. By default from the machine: what the
                available memory holds at about 250 MB per CLI, at most 8 per CPU.
            tool_execution: Who runs the agent's own tools: ``"agent"`` (pydantic-ai, with its approvals, deferred
                calls, retries, events, usage limits and traces; each Claude reply that calls tools is one model
                request) or ``"cli"`` (Claude Code's loop, one model request per turn). See
                ``docs/tool-execution.md``.
            session_store: Where CLI session transcripts are mirrored (claude-agent-sdk's ``SessionStore``, e.g.
                :class:`~claudecode_model.PostgresSessionStore`): a follow-up turn on another worker (another
                process, machine or ``CLAUDE_CONFIG_DIR``) then resumes the session from the store instead of
                replaying the history. Workers must share the store and the working directory.
        """
        check_model_arguments(
            keep_sessions=DEFAULT_KEEP_SESSIONS if keep_sessions is None else keep_sessions,
            session_idle_timeout=session_idle_timeout,
            tool_transport=tool_transport,
            settings=settings,
        )
        if isinstance(spare_sessions, bool) or not isinstance(spare_sessions, int) or spare_sessions < 0:
            raise ClaudeCodeSettingsError(
                f"Invalid spare_sessions={spare_sessions!r}: it must be an integer, 0 or more (0 starts no spare)."
            )
        if max_processes is not None and (
            isinstance(max_processes, bool) or not isinstance(max_processes, int) or max_processes < 1
        ):
            raise ClaudeCodeSettingsError(
                f"Invalid max_processes={max_processes!r}: it must be an integer, 1 or more (or None for the default)."
            )
        self._spare_sessions = spare_sessions
        self._max_processes = max_processes
        self._process_slots: ProcessSlots | None = None
        self._model_name = model_name
        self._cli_path_option = cli_path
        self._cli_path: Path | None = None
        self._env = dict(env or {})
        self._keep_sessions = keep_sessions
        self._session_idle_timeout = session_idle_timeout
        self._tool_transport = tool_transport
        self._session_pool: SessionPool[CLISession] | None = None
        self._tool_setup: ToolSetup | None = None
        self._tool_execution = checked_tool_execution(tool_execution)
        self._parking_lot: ParkingLot[CLITurn] | None = None
        self._session_store = checked_session_store(session_store)
        super().__init__(settings=settings, profile=profile or _default_profile(model_name))

    # --- pydantic-ai Model interface ------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The model name (``"default"`` when the CLI chooses)."""
        return self._model_name or "default"

    @property
    def system(self) -> str:
        """The provider name used by pydantic-ai's instrumentation."""
        return PROVIDER_NAME

    @classmethod
    def supported_native_tools(cls) -> frozenset[type[AbstractNativeTool]]:
        """pydantic-ai's native tools with a Claude Code counterpart: web search, web fetch, MCP servers."""
        from claudecode_model._native_tools import SUPPORTED_NATIVE_TOOLS

        return SUPPORTED_NATIVE_TOOLS

    def unsupported_native_tool_settings(self, native_tool: AbstractNativeTool) -> frozenset[str]:
        """The restricting settings of a native tool Claude Code cannot apply (``max_uses``)."""
        from claudecode_model._native_tools import unsupported_native_tool_settings

        return unsupported_native_tool_settings(native_tool)

    @property
    def cli_path(self) -> Path:
        """The CLI binary this model runs (found on first use)."""
        if self._cli_path is None:
            from claudecode_model._cli import find_cli

            self._cli_path = find_cli(self._cli_path_option)
        return self._cli_path

    @property
    def _pool(self) -> SessionPool[CLISession]:
        """The idle CLI sessions kept for follow-up turns (created with the first request)."""
        if self._session_pool is None:
            from claudecode_model._session import SessionPool

            keep = self._keep_sessions
            self._session_pool = SessionPool(
                max_idle=DEFAULT_KEEP_SESSIONS if keep is None else keep,
                idle_timeout=self._session_idle_timeout,
                surplus_idle_timeout=SURPLUS_IDLE_SECONDS if keep is None else 0.0,
                max_spares=self._spare_sessions,
                max_spares_total=SPARES_PER_SIGNATURE_TOTAL * self._spare_sessions,
            )
        return self._session_pool

    @property
    def _slots(self) -> ProcessSlots:
        """The cap on this model's live CLI processes (created with the first request)."""
        if self._process_slots is None:
            from claudecode_model._slots import ProcessSlots, default_max_processes

            limit = self._max_processes if self._max_processes is not None else default_max_processes()
            self._process_slots = ProcessSlots(limit)
        return self._process_slots

    @property
    def _tools(self) -> ToolSetup:
        """How this model serves tools (created on first use)."""
        if self._tool_setup is None:
            from claudecode_model._request_tools import ToolSetup

            self._tool_setup = ToolSetup(transport=self._tool_transport, execution=self._tool_execution)
        return self._tool_setup

    @property
    def _parked(self) -> ParkingLot[CLITurn]:
        """The CLI turns waiting for tool results pydantic-ai runs (created on first use)."""
        if self._parking_lot is None:
            from claudecode_model._parked import ParkingLot
            from claudecode_model._turn import CLITurn

            self._parking_lot = ParkingLot(close=CLITurn.close_parked, kill=CLITurn.kill)
        return self._parking_lot

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Run one turn through the CLI and return the complete response."""
        return (await self.request_with_metadata(messages, model_settings, model_request_parameters)).response

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
        prewarming = _PREWARMING.get()
        if prewarming is not None:
            from claudecode_model._turn import prewarm_turn

            check_request_settings(self, settings)
            track(self, self._pool.kill_all)  # closed at interpreter exit if still alive
            prewarming.append(await prewarm_turn(self._runner(), repair_history(messages), settings, params))
            raise _Prewarmed
        turn = await self._continue_parked(messages, params)
        if turn is None:
            turn = await self._start_turn(messages, settings, params, run_context)
        try:
            yield ClaudeCodeStreamedResponse(model_request_parameters=params, _turn=turn)
        finally:
            await self._settle(turn)

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
        outcome = stream.turn.translator.outcome
        return ClaudeCodeResponse(
            response=stream.get(),
            result=outcome.result,
            init=outcome.init_data,
            messages=list(stream.turn.raw_messages),
        )

    async def stream_messages(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None = None,
        model_request_parameters: ModelRequestParameters | None = None,
    ) -> AsyncIterator[Message]:
        """Run one model request and yield the raw claude-agent-sdk messages as they arrive.

        Like :meth:`request`, it ends at a reply of Claude's that calls the agent's tools (when pydantic-ai runs them):
        the turn then waits, and a later request carrying the results continues it.
        """
        from claudecode_model._session import ToolsWaiting

        settings, params = self.prepare_request(model_settings, model_request_parameters or ModelRequestParameters())
        turn = await self._continue_parked(messages, params)
        if turn is None:
            turn = await self._start_turn(messages, settings, params)
        try:
            async with aclosing(turn.messages()) as stream:
                async for message in stream:
                    if not isinstance(message, ToolsWaiting):
                        for _ in turn.translator.feed(message):
                            pass
                        yield message
                    if turn.waiting_calls:
                        break
        finally:
            await self._settle(turn)

    def set_agent_toolsets(
        self, toolsets: Any, *, server_name: str = DEFAULT_SERVER_NAME, transport: TransportType = "auto"
    ) -> None:
        """Register pydantic-ai toolsets (e.g. ``agent._function_toolset``) to serve as Claude Code MCP tools.

        This is the explicit API of the tool specification. It is optional: without it, an agent's tools are
        exposed automatically and run through the run's own tool machinery (validation, retries, real deps).
        Registered tools are converted with :func:`~claudecode_model.convert_tool` and called without a run
        context. ``transport`` chooses how they reach the CLI: ``"sdk"`` (in-process MCP server), ``"stdio"``
        (the IPC bridge) or ``"auto"`` (see ``tool_transport`` of the constructor). Calling it again replaces
        the previous registration (with a warning).
        """
        if self._tools.registered_toolsets is not None:
            logger.warning("set_agent_toolsets() replaces the toolsets registered before")
        self._tools.register(toolsets, server_name=server_name, transport=transport)

    def _process_function_tools(self, function_tool_names: list[str]) -> McpSdkServerConfig | None:
        """The in-process MCP server holding only the registered tools this request names."""
        return self._tools.registered_server(function_tool_names)

    async def prewarm(
        self,
        agent: AbstractAgent[Any, Any] | None = None,
        *,
        deps: Any = None,
        model_settings: ModelSettings | None = None,
    ) -> bool:
        """Start a spare CLI process for ``agent``'s next new conversation on this model, and wait until it is ready.

        The spare has what a run of ``agent`` would start a CLI with (its instructions and system prompts, tools,
        output type, settings): the agent's run machinery prepares the request (with ``deps`` for dynamic
        instructions), and the request starts a spare instead of a turn; nothing reaches Claude. Without an agent,
        the spare serves plain requests to the model. Returns whether a spare is ready (``False`` with
        ``spare_sessions=0``, or when no process slot is free).
        """
        prewarmed: list[bool] = []
        token = _PREWARMING.set(prewarmed)
        try:
            if agent is None:
                messages: list[ModelMessage] = [ModelRequest.user_text_prompt("")]
                await self.request(messages, model_settings, ModelRequestParameters())
            else:
                await agent.run("", model=self, deps=deps, model_settings=model_settings)
        except _Prewarmed:
            pass
        except BaseExceptionGroup as group:
            _, rest = group.split(_Prewarmed)
            if rest is not None:
                raise rest from None
        finally:
            _PREWARMING.reset(token)
        if not prewarmed:
            raise RuntimeError("prewarm(): the agent's run did not request this model")
        return prewarmed[0]

    async def aclose(self) -> None:
        """Stop every CLI process this model keeps for follow-up turns, its spares, and every turn waiting for tool
        results."""
        if self._parking_lot is not None:
            await self._parking_lot.close_all()
        if self._session_pool is not None:
            await self._session_pool.close_all()

    def close(self) -> None:
        """Synchronous :meth:`aclose` for programs that use ``run_sync`` (not callable from async code)."""
        close_blocking(self.aclose)

    async def __aexit__(self, *args: Any) -> bool | None:
        await self.aclose()
        return await super().__aexit__(*args)

    # --- internals ------------------------------------------------------------------------------------------

    async def _start_turn(
        self,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> CLITurn:
        """Check the settings (before anything starts), then plan and start the turn."""
        from claudecode_model._turn import start_turn

        check_request_settings(self, settings)
        track(self, self._pool.kill_all)  # closed at interpreter exit if still alive
        # Orphaned or repeated tool results are repaired, with a WARNING saying what changed.
        return await start_turn(self._runner(), repair_history(messages), settings, params, run_context)

    def _run_scope(self) -> AbstractAsyncContextManager[None]:
        """Held by each agent run around its requests (pydantic-ai's hook): settles the turns the run parked."""
        from claudecode_model._agent_run import run_scope

        return run_scope(self._parked, lambda: self._pool.idle_timeout)

    async def _continue_parked(self, messages: list[ModelMessage], params: ModelRequestParameters) -> CLITurn | None:
        """The parked turn waiting for the answers this request carries, with the answers delivered (and a new user
        prompt sent along with them, which Claude gets with the answers)."""
        if self._parking_lot is None:
            return None
        from claudecode_model._agent_run import deliver_answers, pending_calls
        from claudecode_model._compat import new_parts_manager

        self._parked.prune_dead_loops()
        pending = pending_calls(messages, PROVIDER_NAME)
        if pending is None:
            return None
        turn = self._parked.claim(pending.ids)
        if turn is None:
            return None
        try:
            if pending.prompts:
                await turn.say(pending.prompts)
        except BaseException:
            await turn.close_parked()
            raise
        turn.session.waiting_for_tools = False
        deliver_answers(turn.router.results, pending)
        turn.continue_with(messages, new_parts_manager(params))
        return turn

    async def _settle(self, turn: CLITurn) -> None:
        """After a request: park a turn that waits for tool results, else finish it."""
        waiting = turn.waiting_calls
        if not waiting:
            await turn.finish()
            return
        from claudecode_model._agent_run import current_run_scope

        scope = current_run_scope()
        timeout = None if scope is not None else self._pool.idle_timeout
        turn.session.waiting_for_tools = True
        self._parked.park(turn, waiting, timeout=timeout, owner=scope)

    def _runner(self) -> TurnRunner:
        from claudecode_model._turn import TurnRunner

        return TurnRunner(
            self._model_name,
            self.model_name,
            self.cli_path,
            self._env,
            self._tools,
            self._pool,
            session_store=self._session_store,
            slots=self._slots,
        )

    def _settings_overriding_thinking(self, model_settings: Mapping[str, object]) -> tuple[str, ...]:
        """``claude_code_thinking`` takes precedence over the unified ``thinking`` setting."""
        return ("claude_code_thinking",) if "claude_code_thinking" in model_settings else ()

    def _overrides_unified_effort(self, model_settings: Mapping[str, object]) -> bool:
        """``claude_code_effort`` replaces the effort a unified ``thinking`` level maps to."""
        return "claude_code_effort" in model_settings


def _default_profile(model_name: str | None) -> ModelProfile:
    base = anthropic_model_profile(model_name or "claude-sonnet-4-5") or ModelProfile()
    return {
        **base,
        "supports_json_schema_output": True,
        "default_structured_output_mode": "native",
        # What the CLI's input accepts (see _to_anthropic): images, PDF and plain text; no audio, video or Office files.
        "supports_audio_file_input": False,
        "supports_video_input": False,
        "supported_document_media_types": frozenset({"application/pdf", "text/plain"}),
    }


def _now_utc() -> datetime:
    from claudecode_model._compat import now_utc

    return now_utc()


@dataclass
class ClaudeCodeStreamedResponse(StreamedResponse):
    """Streamed response of a Claude Code turn: true token streaming from the CLI's partial messages."""

    _turn: CLITurn
    _timestamp: datetime = field(default_factory=lambda: _now_utc())
    _closed: bool = field(default=False, init=False)

    @property
    def turn(self) -> CLITurn:
        """The CLI turn behind this response."""
        return self._turn

    @property
    def _parts_manager(self) -> ModelResponsePartsManager:  # the parts the turn's translator builds
        return self._turn.translator.parts

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        from claudecode_model._session import ToolsWaiting

        turn = self._turn
        async with aclosing(turn.messages()) as messages:
            async for message in messages:
                if self._closed:
                    return
                if isinstance(message, ToolsWaiting):  # a reply that was not streamed ended with agent tool calls
                    break
                for event in turn.translator.feed(message):
                    yield event
                    if self._closed:  # nothing after cancel(): the response was recorded as it stood
                        return
                if turn.waiting_calls:  # Claude's reply called tools pydantic-ai runs: this response ends here
                    break
        if turn.wants_structured_output and not turn.waiting_calls:
            # Native output is read from the text after the last tool call: the validated JSON the CLI returned.
            part = TextPart(turn.structured_output_text())
            yield self._parts_manager.handle_part(vendor_part_id="structured_output", part=part)
        summary = turn.conclude(turn.translator.kept(self._parts_manager.get_parts()))
        self._usage = summary.usage
        self.finish_reason = summary.finish_reason
        self.provider_details = summary.provider_details
        self.provider_response_id = summary.provider_response_id

    def get(self) -> ModelResponse:
        """The response so far, without what aborted attempts streamed (see :mod:`claudecode_model._attempts`)."""
        response = super().get()
        return replace(response, parts=self._turn.translator.kept(response.parts))

    async def close_stream(self) -> None:
        """Stop the CLI turn (used by ``cancel()``): the session is not reused."""
        # Set here, not read from ``cancelled``: wrappers (pydantic-ai's continuation stream) call this directly.
        self._closed = True
        await self._turn.stop()

    def get_stream_cancel_errors(self) -> tuple[type[BaseException], ...]:
        """The error a turn stopped by :meth:`close_stream` ends with (suppressed after ``cancel()``)."""
        return (CLIInterruptedError,)

    @property
    def model_name(self) -> str:
        """The model the CLI used (from its init message), else the name the model was created with."""
        return self._turn.model_used

    @property
    def provider_name(self) -> str:
        return PROVIDER_NAME

    @property
    def provider_url(self) -> str | None:
        return None

    @property
    def timestamp(self) -> datetime:
        return self._timestamp
