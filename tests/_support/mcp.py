"""Test support for tests/tools: drive an in-process MCP server config exactly as the SDK does.

``McpSession`` feeds raw JSON-RPC into the SDK's own ``SdkMcpBridge`` (what the SDK uses when the CLI sends
``mcp_message`` control requests), so a server is exercised through mcp's real dispatch, with no CLI.
"""

from __future__ import annotations

import itertools
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import mcp.types
from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from claude_agent_sdk import McpSdkServerConfig

    from claudecode_model.ipc._types import ToolResult


class McpSession:
    """A handshaken connection to one in-process server."""

    def __init__(self, bridge: SdkMcpBridge) -> None:
        self._bridge = bridge
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        response = await self._bridge.handle(message)
        assert response is not None
        assert "error" not in response, response
        result: dict[str, Any] = response["result"]
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        result = await self.request("tools/list")
        tools: list[dict[str, Any]] = result["tools"]
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, tool_use_id: str | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if tool_use_id is not None:
            params["_meta"] = {"claudecode/toolUseId": tool_use_id}
        return await self.request("tools/call", params)


@asynccontextmanager
async def mcp_session(config: McpSdkServerConfig) -> AsyncIterator[McpSession]:
    """Open the server the way Claude Code does (initialize, initialized), and close it afterwards."""
    bridge = SdkMcpBridge(config["name"], config["instance"])
    try:
        session = McpSession(bridge)
        await session.request(
            "initialize",
            {
                "protocolVersion": mcp.types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "0"},
            },
        )
        await bridge.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield session
    finally:
        await bridge.aclose()


def texts(result: dict[str, Any]) -> list[str]:
    """The text blocks of a ``tools/call`` result (and check nothing else is in it)."""
    assert "structuredContent" not in result
    assert all(block["type"] == "text" for block in result["content"])
    return [block["text"] for block in result["content"]]


def first_text(result: ToolResult) -> str:
    """The text of the first block of a tool result, which must be a text block."""
    block = result["content"][0]
    assert block["type"] == "text"
    return block["text"]
