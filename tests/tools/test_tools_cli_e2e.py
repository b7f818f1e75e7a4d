"""End to end with the real Claude Code CLI: the agent's tools run inside Claude Code's loop.

The offline backend plays Claude: its first answer calls three tools in one response (two of an SDK server
built by ``create_mcp_server_from_tools``, one of the low-level server built by ``build_inprocess_server``),
its second answer ends the turn. The test checks what the CLI sent back as tool results, that the low-level
handler got the API ``tool_use`` id, and that nothing is left running. Run it inside ``scripts/loopback-only``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.test import TestModel

from claudecode_model._tools.core import ToolSpec
from claudecode_model._tools.inprocess_server import build_inprocess_server
from claudecode_model.mcp_integration import allowed_tool_names, create_mcp_server_from_tools, mcp_tool_name
from claudecode_model.testing import OfflineBackend
from tests._support.brains import has_tool_results
from tests._support.processes import process_table

if TYPE_CHECKING:
    from claudecode_model.tool_converter import McpResponse

pytestmark = pytest.mark.cli

ECHO_TEXT = 'exact "text"\n  with spaces  — and ünïcode'


def three_tools_then_done(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the three tools in one response; once their results are back, end the turn."""
    if has_tool_results(messages):
        return ModelResponse(parts=[TextPart("All three tools answered.")])
    return ModelResponse(
        parts=[
            TextPart("Calling the tools."),
            ToolCallPart(mcp_tool_name("echo"), {"text": ECHO_TEXT}, tool_call_id="toolu_e2e_echo"),
            ToolCallPart(mcp_tool_name("explode"), {"message": "the disk is full"}, tool_call_id="toolu_e2e_explode"),
            ToolCallPart("mcp__agent_tools__whoami", {}, tool_call_id="toolu_e2e_whoami"),
        ]
    )


def child_pids() -> set[int]:
    """Direct children of this process, zombies included (an unreaped CLI counts)."""
    return {process.pid for process in process_table() if process.ppid == os.getpid()}


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
        (Path(scratch) / "config").mkdir()
        with OfflineBackend(three_tools_then_done) as backend:
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
                    **backend.cli_env(config_dir=Path(scratch) / "config"),
                    "CLAUDE_CODE_DISABLE_THINKING": "1",
                },
            )
            result: ResultMessage | None = None
            async with asyncio.timeout(90), ClaudeSDKClient(options) as client:
                await client.query("Use the tools.")
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        result = message
            requests = [request.raw for request in backend.requests]

        assert result is not None, stderr
        assert result.is_error is False, (result, stderr)
        assert result.result == "All three tools answered."
        assert result.permission_denials == []

        first_request_tools = {t["name"] for t in requests[0]["tools"]}
        assert {
            mcp_tool_name("echo"),
            mcp_tool_name("explode"),
            "mcp__agent_tools__whoami",
        } <= first_request_tools

        results = tool_results(requests)
        assert calls == [ECHO_TEXT]
        assert result_text(results["toolu_e2e_echo"]) == ECHO_TEXT
        assert not results["toolu_e2e_echo"].get("is_error")
        assert results["toolu_e2e_explode"]["is_error"] is True
        assert "the disk is full" in result_text(results["toolu_e2e_explode"])
        assert seen_ids == ["toolu_e2e_whoami"]
        assert result_text(results["toolu_e2e_whoami"]) == "you called toolu_e2e_whoami"

    assert not path_exists(scratch)
    assert child_pids() == children_before  # disconnect() waited for the CLI to exit
