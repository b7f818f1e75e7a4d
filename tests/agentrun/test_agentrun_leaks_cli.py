"""A turn waiting for pydantic-ai's tool results never outlives its purpose, through the real CLI."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.processes import live_descendants, process_table

pytestmark = pytest.mark.cli

SERVER = "mcp__pydantic_tools__"


def claude_processes() -> set[int]:
    """Live Claude Code CLI processes started by this test process (children of any depth)."""
    descendants = live_descendants()
    return {p.pid for p in process_table() if p.pid in descendants and "_bundled/claude" in " ".join(p.argv)}


async def until_gone() -> set[int]:
    deadline = time.monotonic() + 10
    while (left := claude_processes()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return left


def call_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart(SERVER + "act", {})])
    results = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    return ModelResponse(parts=[TextPart(f"result: {results[0].content if results else None}")])


def deferring_agent(model: ClaudeCodeModel) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def act() -> str:
        return "acted"

    return agent


async def test_closing_the_model_stops_a_waiting_turn(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(call_then_answer))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    result = await deferring_agent(model).run("act")
    assert isinstance(result.output, DeferredToolRequests)
    assert claude_processes(), "the turn waits for the approval"

    await model.aclose()

    assert await until_gone() == set()
    assert len(claude_backend.requests) == 1  # stopped without telling Claude anything more


async def test_a_waiting_turn_is_closed_after_the_idle_timeout_and_the_history_still_continues(
    claude_backend: OfflineBackend,
):
    claude_backend.set_brain(FunctionModel(call_then_answer))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_idle_timeout=0.5)
    try:
        agent = deferring_agent(model)
        first = await agent.run("act")
        assert isinstance(first.output, DeferredToolRequests)
        assert await until_gone() == set()
        assert len(claude_backend.requests) == 1

        [request] = first.output.approvals
        second = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
        )
        assert second.output == "result: acted"
    finally:
        await model.aclose()


async def test_cancelling_the_run_while_a_tool_runs_stops_the_waiting_turn(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(call_then_answer))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    agent = Agent(model)
    started = asyncio.Event()

    @agent.tool_plain
    async def act() -> str:
        started.set()
        await asyncio.Event().wait()  # never returns
        return "unreachable"

    try:
        run = asyncio.create_task(agent.run("act"))
        await asyncio.wait_for(started.wait(), 60)
        assert claude_processes()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert await until_gone() == set()
        assert len(claude_backend.requests) == 1
    finally:
        await model.aclose()


async def test_a_run_abandoned_between_steps_does_not_keep_its_turn_beyond_the_idle_timeout(
    claude_backend: OfflineBackend,
):
    claude_backend.set_brain(FunctionModel(call_then_answer))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_idle_timeout=0.5)
    agent = Agent(model)

    @agent.tool_plain
    def act() -> str:
        return "acted"

    try:
        async with agent.iter("act") as run:
            async for node in run:
                if Agent.is_call_tools_node(node):
                    break  # the caller stops iterating: the tool calls Claude waits for never run
        assert await until_gone() == set()
        assert len(claude_backend.requests) == 1
    finally:
        await model.aclose()


def test_a_waiting_turn_does_not_outlive_the_process(claude_backend: OfflineBackend, tmp_path: Path):
    claude_backend.set_brain(FunctionModel(call_then_answer))
    script = tmp_path / "park_and_exit.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, json, os, sys
            from pydantic_ai import Agent, DeferredToolRequests
            from claudecode_model import ClaudeCodeModel

            async def main():
                model = ClaudeCodeModel(env=json.loads(sys.argv[1]))
                agent = Agent(model, output_type=[str, DeferredToolRequests])

                @agent.tool_plain(requires_approval=True)
                def act() -> str:
                    return "acted"

                result = await agent.run("act")
                assert isinstance(result.output, DeferredToolRequests)
                children = os.popen(f"pgrep -P {os.getpid()}").read().split()
                print(" ".join(children), flush=True)
                # no aclose(): the process just ends

            asyncio.run(main())
            """
        )
    )
    import json

    completed = subprocess.run(
        [sys.executable, str(script), json.dumps(claude_backend.cli_env())],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    children = [int(pid) for pid in completed.stdout.split()]
    assert children, "the CLI ran as a child of the script"
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)
    assert len(claude_backend.requests) == 1
