"""End to end: the real Claude Code CLI starts the bridge and calls tools in this process.

The Anthropic API is a tiny local fake: it answers the first request with tool calls, the second with text.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import claude_agent_sdk
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, SystemMessage, query

from claudecode_model.ipc import IPCSession, stdio_server_config
from tests._support.ipc import Toolbox, process_table, wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(
        not BUNDLED_CLI.exists() and shutil.which("claude") is None, reason="Claude Code CLI not available"
    ),
]

ECHO_TEXT = 'line one\nline two: "ünïcödé" 🎉 {"not": "json-wrapped"}'
TOOL_CALLS = [
    {"id": "toolu_echo_1", "name": "mcp__pydantic_tools__echo", "input": {"text": ECHO_TEXT}},
    {"id": "toolu_fail_2", "name": "mcp__pydantic_tools__fail", "input": {"why": "the disk is on fire"}},
    {"id": "toolu_whoami_3", "name": "mcp__pydantic_tools__whoami", "input": {}},
]


def _sse(events: list[dict[str, object]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _message_stream(blocks: list[dict[str, object]], stop_reason: str) -> bytes:
    events: list[dict[str, object]] = [
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
        if "name" in block:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {}},
        {"type": "message_stop"},
    ]
    return _sse(events)


@dataclass
class FakeAnthropic:
    """Answers POST /v1/messages: tool calls while the conversation has no tool results, then "done"."""

    requests: list[dict[str, object]] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            length = 0
            for header in head.split("\r\n")[1:]:
                name, _, value = header.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            request = json.loads(await reader.readexactly(length)) if length else {}
            self.requests.append(request)
            if tool_results(request):
                payload = _message_stream([{"text": "done"}], "end_turn")
            else:
                payload = _message_stream(list(TOOL_CALLS), "tool_use")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
                + f"content-length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def tool_results(request: dict[str, object]) -> dict[str, dict[str, object]]:
    """The tool_result blocks of a Messages request, by tool_use id."""
    found: dict[str, dict[str, object]] = {}
    messages = request.get("messages")
    assert isinstance(messages, list)
    for message in messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    found[block["tool_use_id"]] = block
    return found


def first_text(block: dict[str, object]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    assert isinstance(content, list)
    return str(content[0]["text"])


@pytest.fixture
async def fake_api() -> AsyncIterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield fake, f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def cli_env(base_url: str, private: Path) -> dict[str, str]:
    (private / "config").mkdir()
    (private / "tmp").mkdir()
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "offline-test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CONFIG_DIR": str(private / "config"),
        "CLAUDE_CODE_TMPDIR": str(private / "tmp"),
    }


def child_processes() -> list[tuple[int, list[str]]]:
    me = os.getpid()
    return [(pid, argv) for pid, ppid, state, argv in process_table() if ppid == me and state != "Z"]


async def test_real_cli_calls_tools_through_the_bridge(
    toolbox: Toolbox, fake_api: tuple[FakeAnthropic, str], tmp_path: Path
) -> None:
    fake, base_url = fake_api
    async with toolbox.session() as session:
        options = ClaudeAgentOptions(
            mcp_servers={"pydantic_tools": stdio_server_config(session)},
            allowed_tools=["mcp__pydantic_tools"],
            tools=[],
            setting_sources=[],
            strict_mcp_config=True,
            permission_mode="dontAsk",
            env=cli_env(base_url, tmp_path),
            cwd=str(tmp_path),
        )
        messages = [message async for message in query(prompt="Use the tools.", options=options)]
        calls_over_the_socket = session.calls_completed
    assert isinstance(session, IPCSession)

    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"name": "pydantic_tools", "status": "connected"}.items() <= init.data["mcp_servers"][0].items()
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.is_error is False
    assert result.result == "done"

    assert calls_over_the_socket == 3
    answered = tool_results(fake.requests[-1])
    echo, fail, whoami = (answered[call["id"]] for call in TOOL_CALLS)  # type: ignore[index]
    assert first_text(echo) == ECHO_TEXT, "the exact text, not JSON-wrapped"
    assert not echo.get("is_error")
    assert fail.get("is_error") is True
    assert first_text(fail) == "the tool failed: the disk is on fire", "the tool's message, not masked"
    assert first_text(whoami) == "tool_use_id=toolu_whoami_3"
    assert toolbox.metas[0]["claudecode/toolUseId"] == "toolu_whoami_3"

    assert await asyncio.to_thread(wait_until, lambda: not child_processes(), 10), child_processes()
