"""The agent's own tools inside Claude Code's loop, end to end with the real CLI (no registration needed)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import ToolDefinition

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.agents import add_constant_tools, square_after_a_retry
from tests._support.brains import call_every_tool_then_summarise
from tests._support.responses import native_parts

pytestmark = pytest.mark.cli


@dataclass
class Deps:
    city: str
    lock: threading.Lock  # not serialisable: the call stays in-process, so any deps type works


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    """A model running the tools inside Claude Code's loop (``tool_execution="cli"``: what this file covers), with
    the backend answering through ``call_every_tool_then_summarise``."""
    claude_backend.set_brain(FunctionModel(call_every_tool_then_summarise("Let me check.")))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution="cli")
    yield model
    await model.aclose()


async def test_plain_and_context_tools_run_with_real_deps(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model, deps_type=Deps)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @agent.tool
    def where(ctx: RunContext[Deps]) -> str:
        """Where the user is."""
        return f"{ctx.deps.city} (lock held: {ctx.deps.lock.locked()})"

    result = await agent.run("go", deps=Deps("Oslo", threading.Lock()))

    assert result.output == "Answer: 4 | Oslo (lock held: False)"
    assert claude_backend.requests[0].tool_names == ["mcp__pydantic_tools__add", "mcp__pydantic_tools__where"]
    calls, returns = native_parts(result.all_messages()[-1])
    assert [(call.tool_name, call.args_as_dict()) for call in calls] == [("add", {"a": 2, "b": 2}), ("where", {})]
    assert len(returns) == 2
    assert sorted(ret.content for ret in returns if isinstance(ret.content, str)) == ["4", "Oslo (lock held: False)"]
    # The exact text reached Claude, not wrapped JSON.
    assert sorted(r.text for r in claude_backend.requests[-1].tool_results()) == ["4", "Oslo (lock held: False)"]


async def test_run_stream_returns_the_answer_not_the_preamble(model: ClaudeCodeModel):
    agent = Agent(model)

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"found {q}"

    async with agent.run_stream("go") as stream:
        output = await stream.get_output()

    assert output == "Answer: found x"


async def test_model_retry_goes_back_to_claude_and_is_corrected(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    await square_after_a_retry(model, claude_backend)
    first_result = claude_backend.requests[1].tool_results()[0]
    assert first_result.is_error
    assert first_result.text == "n must be positive"


async def test_tool_exception_reaches_claude_as_an_error_result(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)

    @agent.tool_plain
    def explode() -> str:
        raise RuntimeError("the disk is on fire")

    result = await agent.run("go")

    tool_result = claude_backend.requests[-1].tool_results()[0]
    assert tool_result.is_error
    assert "the disk is on fire" in tool_result.text
    _, [failed] = native_parts(result.all_messages()[-1])
    assert failed.outcome == "failed"


async def test_only_the_tools_of_the_request_are_exposed(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent: Agent[None, str] = Agent(model)

    async def hide(ctx: RunContext[None], tool_def: ToolDefinition) -> ToolDefinition | None:
        return None

    add_constant_tools(agent, one="1", two="2")

    @agent.tool_plain(prepare=hide)
    def three() -> str:
        return "3"

    result = await agent.run("go")

    assert claude_backend.requests[0].tool_names == ["mcp__pydantic_tools__one", "mcp__pydantic_tools__two"]
    assert result.output == "Answer: 1 | 2"


async def test_concurrent_runs_on_one_model_see_their_own_deps(model: ClaudeCodeModel):
    agent = Agent(model, deps_type=str)

    @agent.tool
    async def whoami(ctx: RunContext[str]) -> str:
        await asyncio.sleep(0.05)
        return ctx.deps

    names = [f"user-{index}" for index in range(6)]
    results = await asyncio.gather(*(agent.run(f"who is {name}", deps=name) for name in names))

    assert [result.output for result in results] == [f"Answer: {name}" for name in names]


async def test_registered_toolsets_seed_path_through_the_cli(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)

    @agent.tool_plain
    def shout(word: str) -> str:
        return word.upper()

    model.set_agent_toolsets(agent._function_toolset)
    result = await agent.run("go")

    assert result.output == "Answer: X"
    assert claude_backend.requests[0].tool_names == ["mcp__pydantic_tools__shout"]


def test_set_agent_toolsets_twice_warns(caplog: pytest.LogCaptureFixture):
    model = ClaudeCodeModel()
    agent = Agent(model)
    model.set_agent_toolsets(agent._function_toolset)

    with caplog.at_level("WARNING"):
        model.set_agent_toolsets(agent._function_toolset)

    assert "replaces the toolsets registered before" in caplog.text


async def test_read_only_tools_run_in_parallel_when_claude_asks_for_several(model: ClaudeCodeModel):
    agent = Agent(model)
    both_started = asyncio.Barrier(2)

    async def meet() -> str:
        # Each call waits until the other one has started: they can only both finish if they run at once.
        async with asyncio.timeout(10):
            await both_started.wait()
        return "met"

    agent.tool_plain(name="left")(meet)
    agent.tool_plain(name="right")(meet)

    result = await agent.run("go")

    assert result.output == "Answer: met | met"


async def test_sequential_tools_never_overlap(model: ClaudeCodeModel):
    agent = Agent(model)
    running: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    async def work(name: str) -> str:
        running.append(name)
        overlaps.append(tuple(running))
        await asyncio.sleep(0.05)
        running.remove(name)
        return name

    @agent.tool_plain(sequential=True)
    async def first() -> str:
        return await work("first")

    @agent.tool_plain(sequential=True)
    async def second() -> str:
        return await work("second")

    result = await agent.run("go")

    assert result.output == "Answer: first | second"
    assert overlaps == [("first",), ("second",)]


async def test_tool_timeout_becomes_a_retry_prompt_for_claude(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)

    @agent.tool_plain(timeout=0.2, retries=1)
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    result = await agent.run("go")

    [tool_result] = claude_backend.requests[-1].tool_results()
    assert tool_result.is_error
    assert "timed out" in tool_result.text.lower()
    assert result.output.startswith("Answer: ")


async def test_tool_calls_count_in_the_run_usage_and_limits_apply(model: ClaudeCodeModel):
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.usage import UsageLimits

    agent = Agent(model)

    add_constant_tools(agent, one="1", two="2")

    result = await agent.run("go")
    assert result.usage.tool_calls == 2
    assert result.usage.requests == 1

    with pytest.raises(UsageLimitExceeded, match="tool_calls_limit of 1"):
        await agent.run("go again", usage_limits=UsageLimits(tool_calls_limit=1))
    # The limit stopped the turn, and the model still serves the next run.
    assert (await agent.run("and again")).output == "Answer: 1 | 2"
