"""``ClaudeCodeModel``: a pydantic-ai model that runs Claude through the Claude Code CLI.

This module keeps the pydantic-ai contract only; a request's CLI turn starts in :mod:`claudecode_model._turns.start`.
claude-agent-sdk and mcp (about a second of imports) are imported at the first request, not with this module.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.profiles import ModelProfileSpec
from pydantic_ai.settings import ModelSettings, merge_model_settings
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RequestUsage

from claudecode_model._history.details import PROVIDER_NAME
from claudecode_model._ignored_settings import IgnoredSettings
from claudecode_model._limit_wait import waiting_out_limits
from claudecode_model._process.exit import close_blocking
from claudecode_model._profile import default_profile
from claudecode_model._resources import ModelResources
from claudecode_model._sessions.limits import ProcessLimits
from claudecode_model._settings_check import UNSUPPORTED_STANDARD_SETTINGS, check_model_arguments
from claudecode_model._streamed import (
    ClaudeCodeResponse,
    ClaudeCodeStreamedResponse,
    collected,
    open_response,
    raw_messages,
)
from claudecode_model._tools.execution import (
    DEFAULT_SERVER_NAME,
    ToolExecution,
    TransportType,
    checked_tool_execution,
)
from claudecode_model._tools.native import (
    SUPPORTED_NATIVE_TOOLS,
    native_tool_reasons,
    unsupported_native_tool_settings,
)
from claudecode_model._tools.tool_choice import offered_tools
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.stores._check import DEFAULT_STORE_TIMEOUT, checked_session_store, checked_store_timeout

if TYPE_CHECKING:
    from claude_agent_sdk import McpSdkServerConfig
    from claude_agent_sdk.types import Message, SessionStore
    from pydantic_ai.agent import AbstractAgent

    from claudecode_model._sessions.transport import CLITransports


__all__ = ["ClaudeCodeModel", "ClaudeCodeResponse", "ClaudeCodeStreamedResponse"]


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

    unsupported_settings = UNSUPPORTED_STANDARD_SETTINGS
    """The standard settings the Claude Code CLI has no way to pass on; each one set warns
    (``UnsupportedSettingWarning``, see ``docs/settings-parity.md``)."""

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
        session_store_timeout: float = DEFAULT_STORE_TIMEOUT,
        cli_transports: CLITransports | None = None,
    ) -> None:
        """Create a Claude Code model.

        Args:
            model_name: The Claude model (``"sonnet"``, ``"opus"``, a full model id), or ``None`` for the CLI's default.
            cli_path: Path to the ``claude`` binary; by default the CLI bundled in claude-agent-sdk, then ``PATH``.
            settings: Default settings for every request (see :class:`ClaudeCodeModelSettings`).
            profile: A model profile; by default pydantic-ai's Anthropic profile with native structured output.
            env: Extra environment variables for every CLI process.
            keep_sessions: The most idle CLI processes the model holds (kept for follow-up turns, and spares; 0:
                none). By default it shares the program's budget of 2 idle CLIs with the other models that use the
                default, spares going first, then the least recently used; a number is the model's own hard bound.
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
            session_store_timeout: Seconds any one call of ``session_store`` may take. A failed store write does
                not fail the turn (its ``provider_details`` say ``"session_store": "incomplete"``; the entries are
                written again later); a failed read makes the turn go on from this machine's copy, or replay the
                history. See ``docs/scaling.md``.
            cli_transports: How sessions reach their CLI: by default a child process each; tests may pass
                :class:`~claudecode_model.testing.ScriptedCLI` (scripted messages, no process).
        """
        limits = ProcessLimits(keep_sessions, session_idle_timeout, spare_sessions, max_processes)
        check_model_arguments(limits, tool_transport=tool_transport, settings=settings)
        self._model_name = model_name
        self._resources = ModelResources(
            model_name=model_name,
            cli_path_option=cli_path,
            env=dict(env or {}),
            limits=limits,
            transport=tool_transport,
            execution=checked_tool_execution(tool_execution),
            session_store=checked_session_store(session_store),
            session_store_timeout=checked_store_timeout(session_store_timeout),
            cli_transports=cli_transports,
        )
        self._ignored = IgnoredSettings()
        super().__init__(settings=settings, profile=profile or default_profile(model_name))

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
        return SUPPORTED_NATIVE_TOOLS

    def unsupported_native_tool_settings(self, native_tool: AbstractNativeTool) -> frozenset[str]:
        """The restricting settings of a native tool Claude Code cannot apply (``max_uses``)."""
        return unsupported_native_tool_settings(native_tool)

    def prepare_request(
        self, model_settings: ModelSettings | None, model_request_parameters: ModelRequestParameters
    ) -> tuple[ModelSettings | None, ModelRequestParameters]:
        """pydantic-ai's preparation, then a warning for each setting Claude Code cannot honour, and only the tools
        the request's ``tool_choice`` allows (raising ``UserError`` for an explicit forcing choice)."""
        with native_tool_reasons(model_request_parameters.native_tools):
            settings, params = super().prepare_request(model_settings, model_request_parameters)
        self._ignored.warn(self.model_id, settings, params.cache)
        return settings, offered_tools(self.model_name, settings, params)

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        """The request's input tokens, estimated as Claude Code does, without an API request (see
        ``docs/settings-parity.md``, "Counting tokens")."""
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        return await self._resources.count_tokens(messages, settings, params)

    @property
    def cli_path(self) -> Path:
        """The CLI binary this model runs (found on first use)."""
        return self._resources.cli_path

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
        async with open_response(self._resources.turn(self, messages, settings, params, run_context), params) as stream:
            yield stream

    async def request_with_metadata(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None = None,
        model_request_parameters: ModelRequestParameters | None = None,
    ) -> ClaudeCodeResponse:
        """Like :meth:`request`, also returning the CLI's result message, init data and raw messages (as the request
        does not stream, without the stream events of text and thinking and the CLI's progress notices)."""
        params = model_request_parameters or ModelRequestParameters()

        async def once() -> ClaudeCodeResponse:  # made again after a usage limit's reset (claude_code_limit_reset_wait)
            if self.profile.get("may_tokenize_special_tokens_in_content", False):
                return await collected(self.request_stream(messages, model_settings, params))  # restores tokens
            settings, prepared = self.prepare_request(model_settings, params)
            turn = self._resources.turn(self, messages, settings, prepared, content_events=False)
            return await collected(open_response(turn, prepared))

        return await waiting_out_limits(merge_model_settings(self.settings, model_settings) or {}, once)

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
        settings, params = self.prepare_request(model_settings, model_request_parameters or ModelRequestParameters())
        async with (
            self._resources.turn(self, messages, settings, params) as turn,
            aclosing(raw_messages(turn)) as stream,
        ):
            async for message in stream:
                yield message

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
        self._resources.tools.register(toolsets, server_name=server_name, transport=transport)

    def _process_function_tools(self, function_tool_names: list[str]) -> McpSdkServerConfig | None:
        """The in-process MCP server holding only the registered tools this request names."""
        return self._resources.tools.registered_server(function_tool_names)

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
        from claudecode_model._prewarm import prewarm

        return await prewarm(self, agent, deps=deps, model_settings=model_settings)

    async def aclose(self) -> None:
        """Stop every CLI process this model keeps for follow-up turns, its spares, and every turn waiting for tool
        results."""
        await self._resources.aclose()

    def close(self) -> None:
        """Synchronous :meth:`aclose`, for programs that use ``run_sync``. Called from async code it stops the CLI
        processes at once and tidies up the rest in a task of the running loop (``await model.aclose()`` waits for
        it all)."""
        close_blocking(self.aclose, stop_now=self._resources.stop_now)

    async def __aexit__(self, *args: Any) -> bool | None:
        await self.aclose()
        return await super().__aexit__(*args)

    def _run_scope(self) -> AbstractAsyncContextManager[None]:
        """Held by each agent run around its requests (pydantic-ai's hook): settles the turns the run parked."""
        from claudecode_model._turns.run_scope import run_scope

        resources = self._resources
        return run_scope(
            lambda: resources.parked_if_created, lambda: resources.pool.idle_timeout, started=time.monotonic()
        )

    def _settings_overriding_thinking(self, model_settings: Mapping[str, object]) -> tuple[str, ...]:
        """``claude_code_thinking`` takes precedence over the unified ``thinking`` setting."""
        return ("claude_code_thinking",) if "claude_code_thinking" in model_settings else ()

    def _overrides_unified_effort(self, model_settings: Mapping[str, object]) -> bool:
        """``claude_code_effort`` replaces the effort a unified ``thinking`` level maps to."""
        return "claude_code_effort" in model_settings
