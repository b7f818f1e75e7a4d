"""Low-level conversion of one pydantic-ai tool into a Claude Agent SDK ``SdkMcpTool`` (a thin layer over the
package's tool core, which also serves registered tools and the agent's own tools).

:func:`convert_tool` keeps the tool's name, description and JSON schema and wraps its function (sync
or async) in an async MCP handler. The handler validates the arguments with the tool's pydantic-ai schema
when it has one, runs sync functions in a worker thread (as pydantic-ai does), and answers with an
:class:`McpResponse`:

* the text Claude sees is exactly what pydantic-ai would send any other model: a ``str`` unchanged,
  ``None`` as ``""``, anything else as compact JSON in insertion order (keys are not sorted; pydantic models,
  dataclasses, dates and the like are serialised by pydantic);
* a value that is already MCP-shaped (``{"content": [{"type": "text", "text": ...}], "isError": ...}``) is
  passed through (text blocks only; other dicts are JSON like any value);
* files (images, documents) cannot be sent this way: returning one raises ``ValueError``, which the handler
  reports as an error result rather than dropping the file silently;
* an exception becomes an ``isError`` response carrying its message (and is logged);
  ``asyncio.CancelledError`` always propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from claudecode_model._tools.conversion import (
    McpServerConfig,
    convert_tool,
    convert_tool_with_context,
    convert_tool_with_deps,
    tool_server,
)
from claudecode_model._tools.core import (
    DEFAULT_SERVER_NAME,
    AgentToolset,
    JsonSchema,
    McpResponse,
    McpTextContent,
    PydanticAITool,
    ToolSpec,
    format_result,
    parameters_json_schema,
    run_tool_call,
    sdk_result,
    tool_spec,
)
from claudecode_model.deps_support import DepsContext, ToolCallContext
from claudecode_model.exceptions import MissingDepsError
from claudecode_model.mcp_integration import convert_tools_to_mcp_server

if TYPE_CHECKING:
    from claude_agent_sdk import McpSdkServerConfig

__all__ = [
    "AgentToolset",
    "JsonSchema",
    "McpResponse",
    "McpServerConfig",
    "McpTextContent",
    "PydanticAITool",
    "convert_mixed_tools_to_mcp_server",
    "convert_tool",
    "convert_tool_with_context",
    "convert_tool_with_deps",
    "convert_tools_to_mcp_server",
    "create_async_handler",
]

logger = logging.getLogger(__name__)


def _format_return_value_as_mcp(value: object) -> McpResponse:
    """Turn a tool's return value into an :data:`McpResponse` (the rules are in the module documentation)."""
    return format_result(value)


def _get_parameters_json_schema(tool: object) -> JsonSchema:
    """A tool's parameters JSON schema (see :func:`claudecode_model.mcp_integration.get_parameters_json_schema`)."""
    return parameters_json_schema(tool)


def _create_async_handler(
    tool: object, deps_context: DepsContext[Any] | None = None
) -> Callable[[dict[str, Any]], Awaitable[McpResponse]]:
    """An async handler for ``tool`` that never raises (except on cancellation): errors become ``isError``.

    Raises:
        ToolValidationError: the tool has an empty name or no function.
        NotImplementedError: the tool takes a run context and no ``deps_context`` was given.
    """
    return _arguments_only(tool_spec(tool, deps_context=deps_context))


def _arguments_only(spec: ToolSpec) -> Callable[[dict[str, Any]], Awaitable[McpResponse]]:
    async def handler(arguments: dict[str, Any]) -> McpResponse:
        return await run_tool_call(spec, arguments, None)

    return handler


def create_async_handler(
    func: Callable[..., Any],
    takes_ctx: bool,
    deps_context: ToolCallContext[Any] | DepsContext[Any] | None = None,
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """Wrap a bare function (sync or async) in an async SDK handler that answers in MCP form.

    ``takes_ctx=True`` passes ``deps_context`` as the function's first argument. Errors become ``isError``
    results carrying the message.

    Raises:
        NotImplementedError: ``takes_ctx`` is true and no ``deps_context`` was given.
    """
    name = getattr(func, "__name__", "tool")
    if takes_ctx and deps_context is None:
        raise MissingDepsError(f"Tool {name!r} takes a RunContext; pass a deps_context.")

    async def call(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        args = (deps_context,) if takes_ctx else ()
        result = func(*args, **arguments)
        if isinstance(result, Awaitable):
            result = await result
        return format_result(result)

    spec = ToolSpec(name=name, description="", input_schema={}, handler=call)

    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        return sdk_result(await run_tool_call(spec, arguments, None))

    return handler


def convert_mixed_tools_to_mcp_server(
    tools: Sequence[object],
    tools_cache: Mapping[str, object] | None = None,
    deps_context: ToolCallContext[Any] | DepsContext[Any] | None = None,
    *,
    server_name: str = DEFAULT_SERVER_NAME,
    server_version: str = "1.0.0",
) -> McpSdkServerConfig:
    """An in-process MCP server for tools of which some take a ``RunContext`` (given ``deps_context``).

    ``tools_cache`` maps names to the full tool objects (looked up by each tool's name); tools not in it are
    used as given. Experimental.
    """
    cache = tools_cache or {}
    chosen = [cache.get(getattr(tool, "name", ""), tool) for tool in tools]
    return tool_server(chosen, server_name, version=server_version, deps_context=deps_context)
