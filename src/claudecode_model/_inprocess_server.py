"""An in-process MCP server on mcp's low-level API, for tools whose exact result text and call id matter.

The SDK's ``create_sdk_mcp_server`` only hands a handler the arguments. This server also gives each
handler the Anthropic ``tool_use`` id Claude Code sends in ``_meta["claudecode/toolUseId"]``, advertises
``readOnlyHint`` for tools that may run in parallel, returns plain text content only (so Claude reads exactly
the handler's text, not structured JSON), and turns a handler's exception into an ``isError`` result carrying
its message (a raised exception would only show Claude "Internal server error"). ``asyncio.CancelledError``
propagates, so Claude Code can cancel a call.

The SDK serves the ``McpSdkServerConfig`` this returns over mcp's in-memory transport (one ``Server.run`` per
CLI session), so every call goes through mcp's own request dispatch.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import McpSdkServerConfig
from mcp.server import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from claudecode_model.exceptions import ToolValidationError
from claudecode_model.tool_converter import JsonSchema, McpResponse, _mcp_input_schema

__all__ = ["TOOL_USE_ID_META_KEY", "ToolCallHandler", "ToolSpec", "build_inprocess_server"]

logger = logging.getLogger(__name__)

TOOL_USE_ID_META_KEY = "claudecode/toolUseId"
"""The ``_meta`` key under which Claude Code sends the API ``tool_use`` id with every ``tools/call``."""

ToolCallHandler = Callable[[dict[str, Any], str | None], Awaitable[McpResponse]]
"""``async (arguments, tool_use_id) -> McpResponse``; ``tool_use_id`` is ``None`` if the client sent none."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool of an in-process server.

    ``handler`` receives the raw arguments (no schema validation happens here) and the ``tool_use`` id.
    ``read_only`` advertises ``readOnlyHint``, which lets Claude Code run several calls at once.
    """

    name: str
    description: str
    input_schema: JsonSchema
    handler: ToolCallHandler
    read_only: bool = False


def _result(response: McpResponse) -> CallToolResult:
    content: list[ContentBlock] = [TextContent(type="text", text=item["text"]) for item in response["content"]]
    return CallToolResult(content=content, is_error=response["isError"])


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def build_inprocess_server(name: str, tools: Sequence[ToolSpec], *, version: str = "1.0.0") -> McpSdkServerConfig:
    """Build an in-process MCP server config (``type="sdk"``) serving ``tools`` with mcp's low-level Server.

    Raises:
        ToolValidationError: an empty server or tool name, or two tools with the same name.
    """
    if not name or not name.strip():
        raise ToolValidationError("The MCP server name must be a non-empty string.")
    specs: dict[str, ToolSpec] = {}
    for spec in tools:
        if not spec.name or not spec.name.strip():
            raise ToolValidationError(f"Tool name must be a non-empty string, got {spec.name!r}.")
        if spec.name in specs:
            raise ToolValidationError(f"Two tools are named {spec.name!r}; tool names must be unique per server.")
        specs[spec.name] = spec
    listing = ListToolsResult(
        tools=[
            Tool(
                name=spec.name,
                description=spec.description,
                input_schema=_mcp_input_schema(spec.input_schema),
                annotations=ToolAnnotations(read_only_hint=True) if spec.read_only else None,
            )
            for spec in specs.values()
        ]
    )

    async def on_list_tools(ctx: object, params: PaginatedRequestParams | None) -> ListToolsResult:
        return listing

    async def on_call_tool(ctx: object, params: CallToolRequestParams) -> CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            return _error(f"Unknown tool {params.name!r}. Available tools: {', '.join(specs) or 'none'}.")
        tool_use_id = (params.meta or {}).get(TOOL_USE_ID_META_KEY)
        try:
            response = await spec.handler(params.arguments or {}, tool_use_id if isinstance(tool_use_id, str) else None)
        except Exception as e:  # CancelledError is a BaseException and propagates
            logger.warning(
                "Tool %r failed: %s: %s",
                spec.name,
                type(e).__name__,
                e,
                exc_info=logger.isEnabledFor(logging.DEBUG),
            )
            return _error(str(e) or type(e).__name__)
        return _result(response)

    server: Server[Any] = Server(name, version=version, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name=name, instance=server)
