"""The agent's own tools inside Claude Code's loop, executed by the run's own tool machinery.

When a request carries function tools and nothing was registered with ``set_agent_toolsets``, each tool is exposed
through an in-process MCP server whose handler runs the call with ``ctx.tool_manager.handle_call``: pydantic-ai's
argument validation, ``ModelRetry`` handling and retry counting, and the run's real ``deps`` of any type.

A CLI session outlives a single run when a conversation continues, so the server does not capture a run: a
:class:`RunToolRouter` belongs to the session and each turn points it at the run that owns the turn.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ToolFailedError, ToolRetryError, UnexpectedModelBehavior
from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tools import ToolDenied

from claudecode_model._inprocess_server import ToolSpec, build_inprocess_server
from claudecode_model.tool_converter import McpResponse, _format_return_value_as_mcp, _text_response

if TYPE_CHECKING:
    from claude_agent_sdk import McpSdkServerConfig
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.tools import RunContext, ToolDefinition

logger = logging.getLogger(__name__)

AGENT_TOOLS_SERVER = "pydantic_tools"


@dataclass
class RunToolRouter:
    """Sends tool calls from the CLI to the run context of the turn in progress."""

    run_context: RunContext[Any] | None = None
    fatal_error: BaseException | None = None
    """An error that must end the run (e.g. the tool retry budget is exhausted); the turn stops at once."""
    calls: list[str] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    """Failed attempts per tool in this turn, since its last success.

    A whole Claude Code turn is one pydantic-ai run step, and pydantic-ai only counts a tool's retries from one
    step to the next: without this count a tool that keeps asking for a retry would never exhaust its budget.
    """

    def bind(self, run_context: RunContext[Any] | None) -> None:
        self.run_context = run_context
        self.fatal_error = None
        self.failures = {}

    async def call(self, name: str, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        ctx = self.run_context
        if ctx is None or ctx.tool_manager is None:
            return _text_response(f"Tool {name!r} cannot run: no agent run is in progress.", is_error=True)
        if self.fatal_error is not None:
            return _text_response(f"Tool {name!r} cannot run: the agent run has failed.", is_error=True)
        call = ToolCallPart(tool_name=name, args=arguments)
        if tool_use_id:
            call.tool_call_id = tool_use_id
        self.calls.append(name)
        manager = ctx.tool_manager
        if manager.ctx is None:
            # The streamed path hands the model a context whose manager is not bound to the step yet.
            manager = await manager.for_run_step(ctx)
        try:
            result = await manager.handle_call(call)
        except ToolRetryError as retry:
            exhausted = self._count_failure(manager, name)
            if exhausted is not None:
                self.fatal_error = exhausted
                return _text_response(str(exhausted), is_error=True)
            return _text_response(_retry_text(retry), is_error=True)
        except ToolFailedError as failed:
            return _text_response(failed.tool_failed.model_response_str(wrap_if_error=False), is_error=True)
        except UnexpectedModelBehavior as error:
            self.fatal_error = error
            return _text_response(str(error), is_error=True)
        self.failures.pop(name, None)
        if isinstance(result, ToolDenied):
            return _text_response(result.message, is_error=True)
        if isinstance(result, ToolReturn):
            return _format_return_value_as_mcp(result.return_value)
        return _format_return_value_as_mcp(result)

    def _count_failure(self, manager: ToolManager[Any], name: str) -> UnexpectedModelBehavior | None:
        """Count a failed attempt; the error pydantic-ai raises once the tool's retry budget is spent."""
        failures = self.failures[name] = self.failures.get(name, 0) + 1
        tool = (manager.tools or {}).get(name)
        max_retries = tool.max_retries if tool is not None else manager.default_max_retries
        earlier = manager.ctx.retries.get(name, 0) if manager.ctx is not None else 0
        if earlier + failures <= max_retries:
            return None
        return UnexpectedModelBehavior(f"Tool {name!r} exceeded max retries count of {max_retries}")


def _retry_text(retry: ToolRetryError) -> str:
    part = retry.tool_retry
    if hasattr(part, "model_response"):
        return str(part.model_response())
    return part.model_response_str()


def tools_signature(tool_defs: list[ToolDefinition]) -> str:
    """A digest of a tool set: a live session can serve a later turn only with the same tools."""
    source = [[tool.name, tool.description, tool.parameters_json_schema, tool.sequential] for tool in tool_defs]
    return hashlib.sha256(json.dumps(source, sort_keys=True, default=str).encode()).hexdigest()


def agent_tools_server(tool_defs: list[ToolDefinition], router: RunToolRouter) -> McpSdkServerConfig:
    """An in-process MCP server exposing ``tool_defs``, each call executed through ``router``."""
    specs = [
        ToolSpec(
            name=tool.name,
            description=tool.description or "",
            input_schema=dict(tool.parameters_json_schema),
            handler=_handler(router, tool.name),
            read_only=not tool.sequential,
        )
        for tool in tool_defs
    ]
    return build_inprocess_server(AGENT_TOOLS_SERVER, specs)


def _handler(router: RunToolRouter, name: str) -> Any:
    async def handle(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        return await router.call(name, arguments, tool_use_id)

    return handle
