"""End to end with the real Claude Code CLI: the agent's tools run inside Claude Code's loop.

A tiny inline Anthropic Messages server (SSE, loopback only) plays Claude: its first answer calls three tools
in one response (two of an SDK server built by ``create_mcp_server_from_tools``, one of the low-level server
built by ``build_inprocess_server``), its second answer ends the turn. The test checks what the CLI sent back
as tool results, that the low-level handler got the API ``tool_use`` id, and that nothing is left running.
Run it inside ``scripts/loopback-only``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from claudecode_model._inprocess_server import ToolSpec, build_inprocess_server
from claudecode_model.mcp_integration import allowed_tool_names, create_mcp_server_from_tools, mcp_tool_name

if TYPE_CHECKING:
    from claudecode_model.tool_converter import McpResponse

pytestmark = pytest.mark.cli

ECHO_TEXT = 'exact "text"\n  with spaces  — and ünïcode'


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def message_stream(blocks: list[dict[str, Any]], stop_reason: str) -> bytes:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        }
    )
    events.append({"type": "message_stop"})
    return b"".join(sse(e) for e in events)


class FakeAnthropic:
    """Answers ``POST /v1/messages`` with a scripted SSE stream and records every request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def __aenter__(self) -> FakeAnthropic:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._connections):
            writer.close()
        await self._server.wait_closed()

    def answer(self, body: dict[str, Any]) -> bytes:
        last = body["messages"][-1]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]):
            return message_stream([{"type": "text", "text": "All three tools answered."}], "end_turn")
        return message_stream(
            [
                {"type": "text", "text": "Calling the tools."},
                {
                    "type": "tool_use",
                    "id": "toolu_e2e_echo",
                    "name": mcp_tool_name("echo"),
                    "input": {"text": ECHO_TEXT},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_e2e_explode",
                    "name": mcp_tool_name("explode"),
                    "input": {"message": "the disk is full"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_e2e_whoami",
                    "name": "mcp__agent_tools__whoami",
                    "input": {},
                },
            ],
            "tool_use",
        )

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    raw = b""
                    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                        raw += await reader.readexactly(size)
                        await reader.readexactly(2)
                    await reader.readuntil(b"\r\n")
                else:
                    raw = await reader.readexactly(int(headers.get("content-length", "0")))
                if not request_line.startswith("POST /v1/messages"):
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                body = json.loads(raw)
                self.requests.append(body)
                payload = self.answer(body)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                    + f"content-length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._connections.discard(writer)
            writer.close()


def child_pids() -> set[int]:
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children = (task / "children").read_text().split()
        pids.update(int(pid) for pid in children)
    return pids


def path_exists(path: str) -> bool:
    return os.path.lexists(path)


def tool_results(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for body in requests:
        for message in body["messages"]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = block
    return found


def result_text(block: dict[str, Any]) -> str:
    """The tool's own text as the CLI sent it to the API.

    The CLI appends a ``<system-reminder>`` block to the last tool result of a turn and adds one ``"\n"`` to
    the text before it; that separator is the CLI's, not the tool's, so it is taken off here.
    """
    content = block["content"]
    if isinstance(content, str):
        return content
    text = str(content[0]["text"])
    if len(content) > 1 and content[-1]["text"].startswith("<system-reminder>") and text.endswith("\n"):
        text = text[:-1]
    return text


async def test_cli_runs_agent_tools_and_returns_faithful_results() -> None:
    agent = Agent(TestModel())
    calls: list[str] = []

    @agent.tool_plain
    def echo(text: str) -> str:
        """Return the text unchanged."""
        calls.append(text)
        return text

    @agent.tool_plain
    def explode(message: str) -> str:
        """Always fails."""
        raise RuntimeError(message)

    seen_ids: list[str | None] = []

    async def whoami(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        seen_ids.append(tool_use_id)
        return {"content": [{"type": "text", "text": f"you called {tool_use_id}"}], "isError": False}

    low_level = build_inprocess_server(
        "agent_tools", [ToolSpec("whoami", "Who called?", {"type": "object", "properties": {}}, whoami, True)]
    )
    children_before = child_pids()
    stderr: list[str] = []

    with tempfile.TemporaryDirectory(prefix="tools-e2e-") as scratch:
        async with FakeAnthropic() as backend:
            options = ClaudeAgentOptions(
                model="claude-sonnet-4-5",
                tools=[],
                mcp_servers={
                    "pydantic_tools": create_mcp_server_from_tools(agent._function_toolset),
                    "agent_tools": low_level,
                },
                allowed_tools=[*allowed_tool_names("pydantic_tools"), *allowed_tool_names("agent_tools")],
                permission_mode="dontAsk",
                setting_sources=[],
                strict_mcp_config=True,
                max_turns=4,
                cwd=scratch,
                stderr=stderr.append,
                env={
                    "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{backend.port}",
                    "ANTHROPIC_API_KEY": "offline-test-key",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_TELEMETRY": "1",
                    "DISABLE_AUTOUPDATER": "1",
                    "DISABLE_ERROR_REPORTING": "1",
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                    "CLAUDE_CODE_DISABLE_THINKING": "1",
                    "ENABLE_TOOL_SEARCH": "false",
                    "CLAUDE_CONFIG_DIR": str(Path(scratch) / "config"),
                    "CLAUDE_CODE_TMPDIR": str(Path(scratch) / "tmp"),
                },
            )
            result: ResultMessage | None = None
            async with asyncio.timeout(90), ClaudeSDKClient(options) as client:
                await client.query("Use the tools.")
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        result = message

        assert result is not None, stderr
        assert result.is_error is False, (result, stderr)
        assert result.result == "All three tools answered."
        assert result.permission_denials == []

        first_request_tools = {t["name"] for t in backend.requests[0]["tools"]}
        assert {
            mcp_tool_name("echo"),
            mcp_tool_name("explode"),
            "mcp__agent_tools__whoami",
        } <= first_request_tools

        results = tool_results(backend.requests)
        assert calls == [ECHO_TEXT]
        assert result_text(results["toolu_e2e_echo"]) == ECHO_TEXT
        assert not results["toolu_e2e_echo"].get("is_error")
        assert results["toolu_e2e_explode"]["is_error"] is True
        assert "the disk is full" in result_text(results["toolu_e2e_explode"])
        assert seen_ids == ["toolu_e2e_whoami"]
        assert result_text(results["toolu_e2e_whoami"]) == "you called toolu_e2e_whoami"

    assert not path_exists(scratch)
    assert child_pids() == children_before  # disconnect() waited for the CLI to exit
