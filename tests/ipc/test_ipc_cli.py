"""End to end: the real Claude Code CLI starts the bridge and calls tools in this process.

The offline backend plays Claude: it answers the first request with tool calls, the second with text.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import claude_agent_sdk
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, SystemMessage, query
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from claudecode_model.ipc import IPCSession, stdio_server_config
from claudecode_model.testing import OfflineBackend
from tests._support.brains import has_tool_results
from tests._support.ipc import Toolbox
from tests._support.polling import wait_until
from tests._support.processes import live_children

if TYPE_CHECKING:
    pass

BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(
        not BUNDLED_CLI.exists() and shutil.which("claude") is None, reason="Claude Code CLI not available"
    ),
]

ECHO_TEXT = 'line one\nline two: "ünïcödé" 🎉 {"not": "json-wrapped"}'


class ToolUse(TypedDict):
    """A tool call Claude makes, as the API carries it."""

    id: str
    name: str
    input: dict[str, object]


TOOL_CALLS: list[ToolUse] = [
    {"id": "toolu_echo_1", "name": "mcp__pydantic_tools__echo", "input": {"text": ECHO_TEXT}},
    {"id": "toolu_fail_2", "name": "mcp__pydantic_tools__fail", "input": {"why": "the disk is on fire"}},
    {"id": "toolu_whoami_3", "name": "mcp__pydantic_tools__whoami", "input": {}},
]


def tools_then_done(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Tool calls while the conversation has no tool results, then "done"."""
    if has_tool_results(messages):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(
        parts=[ToolCallPart(call["name"], call["input"], tool_call_id=call["id"]) for call in TOOL_CALLS]
    )


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


def child_processes() -> list[tuple[int, list[str]]]:
    return [(process.pid, process.argv) for process in live_children()]


async def test_real_cli_calls_tools_through_the_bridge(toolbox: Toolbox, tmp_path: Path) -> None:
    async with OfflineBackend(tools_then_done) as backend, toolbox.session() as session:
        options = ClaudeAgentOptions(
            mcp_servers={"pydantic_tools": stdio_server_config(session)},
            allowed_tools=["mcp__pydantic_tools"],
            tools=[],
            setting_sources=[],
            strict_mcp_config=True,
            permission_mode="dontAsk",
            env=backend.cli_env(),
            cwd=str(tmp_path),
        )
        messages = [message async for message in query(prompt="Use the tools.", options=options)]
        calls_over_the_socket = session.calls_completed
        last_request = backend.requests[-1].raw
    assert isinstance(session, IPCSession)

    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"name": "pydantic_tools", "status": "connected"}.items() <= init.data["mcp_servers"][0].items()
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.is_error is False
    assert result.result == "done"

    assert calls_over_the_socket == 3
    answered = tool_results(last_request)
    echo, fail, whoami = (answered[call["id"]] for call in TOOL_CALLS)
    assert first_text(echo) == ECHO_TEXT, "the exact text, not JSON-wrapped"
    assert not echo.get("is_error")
    assert fail.get("is_error") is True
    assert first_text(fail) == "the tool failed: the disk is on fire", "the tool's message, not masked"
    assert first_text(whoami) == "tool_use_id=toolu_whoami_3"
    assert toolbox.metas[0]["claudecode/toolUseId"] == "toolu_whoami_3"

    assert await asyncio.to_thread(wait_until, lambda: not child_processes(), 10), child_processes()
