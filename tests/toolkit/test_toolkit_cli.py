"""The toolkit with ClaudeCodeModel through the real CLI: the output cache and its grep tool, and ``done``."""

from __future__ import annotations

import re

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from claudecode_model.toolkit import ToolOutputCache, done_output

pytestmark = pytest.mark.cli

BIG_LOG = "\n".join(f"line {n}: {'needle here' if n == 1777 else 'hay'}" for n in range(1, 3001))


def _returns(messages: list[ModelMessage]) -> list[str]:
    return [str(part.content) for part in messages[-1].parts if isinstance(part, ToolReturnPart)]


async def test_claude_sees_a_truncated_output_and_greps_the_cache(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    seen_by_claude: list[str] = []

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__read_log", {})])
        seen_by_claude.append(returns[0])
        ref = re.search(r"ref=(out_[0-9a-z]+)", returns[0])
        if ref is not None and "needle" not in returns[0]:
            grep = {"ref_id": ref.group(1), "pattern": "needle"}
            return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__tool_output_cache_grep", grep)])
        return ModelResponse(parts=[TextPart(f"found: {returns[0]}")])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, capabilities=[ToolOutputCache(max_output_bytes=2_000)])

    @agent.tool_plain
    def read_log() -> str:
        return BIG_LOG

    result = await agent.run("Find the needle in the log.")

    truncated = seen_by_claude[0]
    assert len(truncated.encode()) < 2_300
    assert truncated.splitlines()[0] == "line 1: hay"
    assert "[tool output truncated; ref=out_" in truncated
    assert "line 1777: needle here" in result.output
    assert "mcp__pydantic_tools__tool_output_cache_grep" in claude_backend.requests[0].tool_names


async def test_done_ends_the_run_and_later_calls_of_the_reply_are_not_run(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    ran: list[str] = []

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[
                ToolCallPart("mcp__pydantic_tools__done", {"message": "finished the chores"}),
                ToolCallPart("mcp__pydantic_tools__chore", {}),
            ]
        )

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=[str, done_output()], end_strategy="early")

    @agent.tool_plain(sequential=True)
    def chore() -> str:
        ran.append("chore")
        return "done a chore"

    result = await agent.run("Do the chores, then call done.")

    assert result.output == "finished the chores"
    assert ran == []
