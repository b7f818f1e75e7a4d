"""pydantic-ai's ConcurrencyLimitedModel around ClaudeCodeModel, beside the model's own process cap."""

from __future__ import annotations

import asyncio
import os

import pytest
from pydantic_ai import Agent, ConcurrencyLimiter
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.concurrency import ConcurrencyLimitedModel
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.processes import live_descendants, process_table
from tests._support.responses import details

pytestmark = pytest.mark.cli


def cli_count() -> int:
    """The CLI processes of this test that are running (one killed and still exiting, in state D, is not)."""
    mine = live_descendants(os.getpid())
    return sum(
        1
        for p in process_table()
        if p.pid in mine and p.state != "D" and any("--output-format" in arg for arg in p.argv)
    )


def lookup_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__lookup", {"key": "x"})])
    return ModelResponse(parts=[TextPart(f"found {returns[0].content}")])


async def test_concurrent_runs_share_the_limiter_and_stay_within_the_process_cap(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(lookup_then_answer))
    limiter = ConcurrencyLimiter(max_running=1)
    inner = ClaudeCodeModel(env=claude_backend.cli_env(), max_processes=2, spare_sessions=0)
    agent = Agent(ConcurrencyLimitedModel(inner, limiter=limiter))

    @agent.tool_plain
    async def lookup(key: str) -> str:
        await asyncio.sleep(0.1)
        return f"value of {key}"

    most = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, cli_count())
            await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch())
    try:
        results = await asyncio.gather(*(agent.run(f"look up {index}") for index in range(3)))
    finally:
        done.set()
        await watcher
        await inner.aclose()

    assert [result.output for result in results] == ["found value of x"] * 3
    # Each run made two model requests (its tool call was answered in between). A turn waiting for a tool result
    # keeps its process; a request holding the limiter while every slot is so held closes the oldest such turn
    # after a grace period (its run then continues from the history), so that nothing waits forever.
    assert all(result.usage.requests == 2 for result in results)
    assert 1 <= most <= 2
    sources = [details(r.response)["session_source"] for r in results]
    assert "replay" in sources
    assert limiter.waiting_count == 0
