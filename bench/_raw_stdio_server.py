"""The raw side of "bridge spawn -> ready": the stdio MCP server a raw SDK user writes, on mcp's low-level API.

Run as ``python bench/_raw_stdio_server.py``; it serves one ``echo`` tool until stdin closes.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

_TOOLS = ListToolsResult(
    tools=[
        Tool(
            name="echo",
            description="Returns its text.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )
    ]
)


async def _list_tools(ctx: object, params: PaginatedRequestParams | None) -> ListToolsResult:
    return _TOOLS


async def _call_tool(ctx: object, params: CallToolRequestParams) -> CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return CallToolResult(content=[TextContent(type="text", text=text)])


async def _main() -> None:
    server: Server[Any] = Server("raw-echo", on_list_tools=_list_tools, on_call_tool=_call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main)
