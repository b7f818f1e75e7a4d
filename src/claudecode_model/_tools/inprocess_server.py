"""An in-process MCP server on mcp's low-level API, for tools whose exact result text and call id matter.

The SDK's ``create_sdk_mcp_server`` only hands a handler the arguments. This server also gives each
handler the Anthropic ``tool_use`` id Claude Code sends in ``_meta["claudecode/toolUseId"]``, advertises
``readOnlyHint`` for tools that may run in parallel, returns plain text content only (so Claude reads exactly
the handler's text, not structured JSON), and turns a handler's exception into an ``isError`` result carrying
its message (a raised exception would only show Claude "Internal server error"). ``asyncio.CancelledError``
propagates, so Claude Code can cancel a call.

Each call runs through :func:`~claudecode_model._tools.core.run_tool_call`, as calls over the IPC bridge do, so both
transports answer alike. The SDK serves the ``McpSdkServerConfig`` this returns over mcp's in-memory transport
(one ``Server.run`` per CLI session), so every call goes through mcp's own request dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from pydantic import TypeAdapter

from claudecode_model._tools.call_results import RESULT_SIZE_META
from claudecode_model._tools.core import (
    TOOL_USE_ID_META_KEY,
    McpResponse,
    ToolSpec,
    checked_server_name,
    mcp_input_schema,
    run_tool_call,
    text_result,
    unique_specs,
)

__all__ = ["build_inprocess_server"]


def _result(response: McpResponse) -> CallToolResult:
    """The MCP result of a handler's answer: text blocks, and image or resource blocks as MCP defines them."""
    content = [_content_block(item) for item in response["content"]]
    return CallToolResult(content=content, is_error=bool(response.get("isError", False)))


def _content_block(item: Mapping[str, Any]) -> ContentBlock:
    if item.get("type") == "text":
        return TextContent(type="text", text=str(item["text"]))
    return _CONTENT_BLOCK.validate_python(item)


_CONTENT_BLOCK: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)


def build_inprocess_server(name: str, tools: Sequence[ToolSpec], *, version: str = "1.0.0") -> McpSdkServerConfig:
    """Build an in-process MCP server config (``type="sdk"``) serving ``tools`` with mcp's low-level Server.

    Raises:
        ToolValidationError: an empty server or tool name, or two tools with the same name.
    """
    checked_server_name(name)
    specs = unique_specs(tools)
    listing = ListToolsResult(
        tools=[
            Tool(
                name=spec.name,
                description=spec.description,
                input_schema=mcp_input_schema(spec.input_schema),
                annotations=ToolAnnotations(read_only_hint=True) if spec.read_only else None,
                _meta=dict(RESULT_SIZE_META),
            )
            for spec in specs.values()
        ]
    )

    async def on_list_tools(ctx: object, params: PaginatedRequestParams | None) -> ListToolsResult:
        return listing

    async def on_call_tool(ctx: object, params: CallToolRequestParams) -> CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            unknown = f"Unknown tool {params.name!r}. Available tools: {', '.join(specs) or 'none'}."
            return _result(text_result(unknown, is_error=True))
        tool_use_id = (params.meta or {}).get(TOOL_USE_ID_META_KEY)
        arguments = params.arguments or {}
        return _result(await run_tool_call(spec, arguments, tool_use_id if isinstance(tool_use_id, str) else None))

    server: Server[Any] = Server(name, version=version, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name=name, instance=server)
