"""A CLI session's tool router, and pydantic-ai tool definitions as the MCP tool specs a request serves.

A :class:`RunToolRouter` belongs to one CLI session and serves both execution modes. A CLI session outlives a single
run when a conversation continues, so the servers do not capture a run: each turn points the router at the run that
owns it (:meth:`RunToolRouter.bind`). With ``tool_execution="agent"`` it holds the session's :class:`CallResults`
(the handlers wait there for pydantic-ai's results); with ``"cli"`` its :meth:`RunToolRouter.call` runs a call with
``ctx.tool_manager.handle_call`` inside Claude Code's loop: pydantic-ai's argument validation, ``ModelRetry``
handling and retry counting, and the run's real ``deps`` of any type, and an output tool call is captured. In both,
it keeps the session's cut results (:class:`ResultReader`) and holds its built-in gate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from pydantic_ai.exceptions import ToolFailedError, ToolRetryError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import ToolCallPart, ToolReturn, ToolReturnPart
from pydantic_ai.tools import ToolDenied

from claudecode_model._tools.core import (
    DEFAULT_SERVER_NAME,
    McpResponse,
    ToolCallHandler,
    ToolSpec,
    format_result,
    text_result,
)
from claudecode_model._tools.parked_calls import CallResults
from claudecode_model._tools.result_reader import ResultReader

if TYPE_CHECKING:
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.tools import RunContext, ToolDefinition

    from claudecode_model._tools.builtin_approvals import BuiltinGate

__all__ = [
    "AGENT_TOOLS_SERVER",
    "OUTPUT_TOOLS_SERVER",
    "RunToolRouter",
    "agent_tool_specs",
    "output_tool_specs",
    "tool_specs",
    "tools_signature",
]

logger = logging.getLogger(__name__)

AGENT_TOOLS_SERVER = DEFAULT_SERVER_NAME
OUTPUT_TOOLS_SERVER = "pydantic_output"
"""Serves pydantic-ai's output tools when the function tools come from ``set_agent_toolsets`` registrations."""


@dataclass
class RunToolRouter:
    """Sends tool calls from the CLI to the run context of the turn in progress."""

    run_context: RunContext[Any] | None = None
    fatal_error: BaseException | None = None
    """An error that must end the run (e.g. the tool retry budget is exhausted), raised after the turn."""
    output_call: ToolCallPart | None = None
    """The output tool call Claude made in this turn: it ends the turn and goes to pydantic-ai to validate."""
    stop_turn: Callable[[], None] | None = None
    """Stops the CLI turn early (see :meth:`attach`): after a fatal error or an output tool call."""
    failures: dict[str, int] = field(default_factory=dict)
    """Failed attempts per tool in this turn, since its last success.

    A whole Claude Code turn is one pydantic-ai run step, and pydantic-ai only counts a tool's retries from one
    step to the next: without this count a tool that keeps asking for a retry would never exhaust its budget.
    """
    _in_flight: int = 0
    trace_context: otel_context.Context | None = None
    """The trace context of the request the router was bound to (the run's tool spans nest under it)."""
    results: CallResults = field(default_factory=CallResults)
    """Results of the calls pydantic-ai runs itself (agent-run execution): the waiting handlers read them here."""
    builtin_gate: BuiltinGate | None = None
    """The session's decisions on built-in calls (approvals, the policy); ``None`` if the session has none."""
    reader: ResultReader = field(default_factory=ResultReader)
    """The whole text of the session's cut tool results, and the tools that read them."""
    whole_results: dict[str, str] = field(default_factory=dict)
    """The whole text of this turn's results that Claude Code got cut, by ``tool_use`` id (the response reports it)."""

    def attach(
        self,
        *,
        stop_turn: Callable[[], None],
        on_wait: Callable[[frozenset[str]], None],
        relist: Callable[[str], Awaitable[None]],
    ) -> None:
        """Route to the session that owns this router: how it stops a turn early, what it is told when handlers
        start waiting for pydantic-ai's results, and how it has the CLI list a server's tools again."""
        self.stop_turn = stop_turn
        self.results.tell_waits(on_wait)
        self.reader.attach(relist)

    def bind(self, run_context: RunContext[Any] | None) -> None:
        self.run_context = run_context
        # Calls run in the session's task, which carries no trace context: they join the request's trace instead.
        self.trace_context = otel_context.get_current()
        self.fatal_error = None
        self.output_call = None
        self.failures = {}
        self.whole_results = {}

    def _fail(self, error: BaseException) -> McpResponse:
        self.fatal_error = error
        if self.stop_turn is not None:
            self.stop_turn()
        return text_result(str(error), is_error=True)

    def capture_output(self, name: str, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        """Keep an output tool call for pydantic-ai and end the CLI turn: the run's result is in the call."""
        if self.output_call is not None:
            return text_result("A final result was already given in this turn.", is_error=True)
        call = _call_part(name, arguments, tool_use_id)
        self.output_call = call
        if self.stop_turn is not None:
            self.stop_turn()
        return text_result("Final result received.")

    def _check_tool_calls_limit(self, ctx: RunContext[Any]) -> UsageLimitExceeded | None:
        limits = ctx.usage_limits
        if limits is None or limits.tool_calls_limit is None:
            return None
        projected = dataclasses.replace(ctx.usage, tool_calls=ctx.usage.tool_calls + self._in_flight + 1)
        try:
            limits.check_before_tool_call(projected)
        except UsageLimitExceeded as error:
            return error
        return None

    async def call(self, name: str, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        ctx = self.run_context
        if ctx is None or ctx.tool_manager is None:
            return text_result(f"Tool {name!r} cannot run: no agent run is in progress.", is_error=True)
        call = _call_part(name, arguments, tool_use_id)
        if self.fatal_error is not None or self.output_call is not None:
            return text_result(f"Tool {name!r} was not run: the agent run is ending.", is_error=True)
        if (limit_error := self._check_tool_calls_limit(ctx)) is not None:
            return self._fail(limit_error)
        manager = ctx.tool_manager
        if manager.ctx is None:
            # The streamed path hands the model a context whose manager is not bound to the step yet.
            manager = await manager.for_run_step(ctx)
        self._in_flight += 1
        token = otel_context.attach(self.trace_context) if self.trace_context is not None else None
        try:
            result = await manager.handle_call(call)
        except ToolRetryError as retry:
            exhausted = self._count_failure(manager, name)
            if exhausted is not None:
                return self._fail(exhausted)
            return text_result(_retry_text(retry), is_error=True)
        except ToolFailedError as failed:
            return text_result(failed.tool_failed.model_response_str(wrap_if_error=False), is_error=True)
        except UnexpectedModelBehavior as error:
            return self._fail(error)
        finally:
            self._in_flight -= 1
            if token is not None:
                otel_context.detach(token)
        self.failures.pop(name, None)
        if isinstance(result, ToolDenied):
            return text_result(result.message, is_error=True)
        value = result.return_value if isinstance(result, ToolReturn) else result
        response, whole = await self.reader.fit(format_result(value, limit=None), tool_use_id)
        if whole is not None and tool_use_id is not None:
            self.whole_results[tool_use_id] = whole
        return response

    def _count_failure(self, manager: ToolManager[Any], name: str) -> UnexpectedModelBehavior | None:
        """Count a failed attempt; the error pydantic-ai raises once the tool's retry budget is spent."""
        failures = self.failures[name] = self.failures.get(name, 0) + 1
        tool = (manager.tools or {}).get(name)
        max_retries = tool.max_retries if tool is not None else manager.default_max_retries
        earlier = manager.ctx.retries.get(name, 0) if manager.ctx is not None else 0
        if earlier + failures <= max_retries:
            return None
        return UnexpectedModelBehavior(f"Tool {name!r} exceeded max retries count of {max_retries}")


def _call_part(name: str, arguments: dict[str, Any], tool_use_id: str | None) -> ToolCallPart:
    """The call as pydantic-ai sees it, with Claude's ``tool_use`` id when the CLI sent one."""
    call = ToolCallPart(tool_name=name, args=arguments)
    if tool_use_id:
        call.tool_call_id = tool_use_id
    return call


def _retry_text(retry: ToolRetryError) -> str:
    """The retry message as pydantic-ai's own models send it: the bare text, not wrapped as ``{"error": ...}``."""
    part = retry.tool_retry
    if isinstance(part, ToolReturnPart):
        return part.model_response_str(wrap_if_error=False)
    return str(part.model_response())


def tools_signature(tool_defs: list[ToolDefinition]) -> str:
    """A digest of a tool set: a live session can serve a later turn only with the same tools."""
    source = [[tool.name, tool.description, tool.parameters_json_schema, tool.sequential] for tool in tool_defs]
    return hashlib.sha256(json.dumps(source, sort_keys=True, default=str).encode()).hexdigest()


def tool_specs(
    tool_defs: Sequence[ToolDefinition],
    handler: Callable[[str], ToolCallHandler],
    *,
    read_only: Callable[[ToolDefinition], bool],
) -> list[ToolSpec]:
    """pydantic-ai tool definitions as MCP tool specs, each with ``handler(name)``; ``read_only`` marks the tools
    whose calls Claude Code may run at once."""
    return [
        ToolSpec(
            name=tool.name,
            description=tool.description or "",
            input_schema=dict(tool.parameters_json_schema),
            handler=handler(tool.name),
            read_only=read_only(tool),
        )
        for tool in tool_defs
    ]


def agent_tool_specs(tool_defs: list[ToolDefinition], router: RunToolRouter) -> list[ToolSpec]:
    """The agent's tools as MCP tool specs, each call executed through ``router``.

    Tools pydantic-ai may run concurrently (not ``sequential``) are marked read-only, which lets Claude Code run
    several calls of them at once.
    """

    def handler(name: str) -> ToolCallHandler:
        async def handle(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
            return await router.call(name, arguments, tool_use_id)

        return handle

    return tool_specs(tool_defs, handler, read_only=lambda tool: not tool.sequential)


def output_tool_specs(output_defs: list[ToolDefinition], router: RunToolRouter) -> list[ToolSpec]:
    """pydantic-ai's output tools as MCP tool specs: a call is captured for the agent to validate."""

    def handler(name: str) -> ToolCallHandler:
        async def handle(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
            return router.capture_output(name, arguments, tool_use_id)

        return handle

    return tool_specs(output_defs, handler, read_only=lambda tool: False)
