"""The MCP log files Claude Code writes into the user's cache for a CLI process are removed once it is gone; the
files of other sessions sharing the cache stay."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model._process.mcp_logs import remove_mcp_logs
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def call_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if sum(isinstance(message, ModelResponse) for message in messages) == 0:
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {"city": "Paris"})])
    return ModelResponse(parts=[TextPart("done")])


def log_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("claude-cli-nodejs/*/mcp-logs-*/*.jsonl"))


async def test_the_logs_of_a_cli_go_with_it_and_other_sessions_logs_stay(
    claude_backend: OfflineBackend, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    cache, cwd = tmp_path / "cache", tmp_path / "work"
    cwd.mkdir()
    key = str(cwd).replace("/", "-").replace("_", "-")
    other = cache / "claude-cli-nodejs" / key / "mcp-logs-pydantic-tools" / "2020-01-01T00-00-00-000Z.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"debug": "Calling MCP tool: x", "sessionId": "someone-else"}) + "\n")
    claude_backend.set_brain(FunctionModel(call_once))
    model = ClaudeCodeModel(env={**claude_backend.cli_env(), "XDG_CACHE_HOME": str(cache)}, spare_sessions=0)
    agent = Agent(model, model_settings=ClaudeCodeModelSettings({"claude_code_cwd": str(cwd)}))

    @agent.tool_plain
    async def forecast(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    try:
        assert (await agent.run("Weather in Paris?")).output == "done"
    finally:
        with caplog.at_level(logging.DEBUG, logger="claudecode_model._process.mcp_logs"):
            await model.aclose()  # the CLI writes its log of the tool call as it exits

    assert "removed 1 MCP log file(s)" in caplog.text
    assert log_files(cache) == [other]


def test_files_of_other_sessions_older_files_and_unreadable_ones_are_left(tmp_path: Path):
    folder = tmp_path / "claude-cli-nodejs" / "-work" / "mcp-logs-x"
    folder.mkdir(parents=True)
    mine, theirs, garbled = folder / "a.jsonl", folder / "b.jsonl", folder / "c.jsonl"
    mine.write_text(json.dumps({"sessionId": "s1"}) + "\n")
    theirs.write_text(json.dumps({"sessionId": "s2"}) + "\n")
    garbled.write_text("not json\n")

    removed = remove_mcp_logs({"XDG_CACHE_HOME": str(tmp_path)}, "/work", {"s1"}, since=0.0)

    assert removed == 1
    assert sorted(path.name for path in folder.iterdir()) == ["b.jsonl", "c.jsonl"]
    assert remove_mcp_logs({"XDG_CACHE_HOME": str(tmp_path)}, "/work", {"s2"}, since=theirs.stat().st_mtime + 10) == 0
