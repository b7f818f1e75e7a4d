"""A Claude Code CLI that dies is noticed at once, and what pydantic-ai holds is not lost.

While a turn waits for tool results pydantic-ai runs (a tool call in progress, an approval asked of the user), the
death is logged at once and the turn is let go; the results then reach Claude in a new session that replays the
conversation. A turn in progress fails with an error naming the signal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model.exceptions import CLIProcessError
from claudecode_model.testing import Failure
from tests._support.brains import CLI_CONTINUATION_PROMPT, conversation_prompts, tool_returns
from tests._support.polling import wait_for

if TYPE_CHECKING:
    from tests.reliability.conftest import Harness

# The agent's tools run in pydantic-ai (the matrix covers a CLI killed while Claude Code runs them).
pytestmark = [pytest.mark.cli, pytest.mark.parametrize("harness", ["agent"], indirect=True)]

DIED = "ended (the process was killed by SIGKILL (exit status -9))"


def tool_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """``call <tool>``: calls it, then answers ``done: <result>``; anything else is echoed."""
    prompts = conversation_prompts(messages)
    returns = tool_returns(*messages)
    if returns:
        return ModelResponse(parts=[TextPart(f"done: {returns[-1].content}")])
    prompt = str(prompts[-1])
    if prompt.startswith("call "):
        [name] = [tool.name for tool in info.function_tools if tool.name.endswith(prompt.removeprefix("call "))]
        return ModelResponse(parts=[ToolCallPart(name, {})])
    return ModelResponse(parts=[TextPart(f"echo: {prompt}")])


def user_prompts(harness: Harness) -> list[str]:
    """The user prompts Claude received in the last request (the CLI's own continuation prompt left out)."""
    return [text for text in harness.backend.requests[-1].user_texts() if text != CLI_CONTINUATION_PROMPT]


def source_of(messages: list[ModelMessage]) -> object:
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    return (response.provider_details or {}).get("session_source")


async def test_cli_killed_while_a_tool_runs_the_run_goes_on_with_the_tool_result(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.backend.set_brain(FunctionModel(tool_brain))
    agent = Agent(harness.model)
    started, release = asyncio.Event(), asyncio.Event()

    @agent.tool_plain
    async def slow_lookup() -> str:
        started.set()
        await release.wait()
        return "found it"

    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        run = asyncio.create_task(agent.run("call slow_lookup"))
        await asyncio.wait_for(started.wait(), 60)
        os.kill(await harness.wait_for_new_cli(), signal.SIGKILL)
        # Noticed while the tool still runs: logged, and the CLI's turn let go (no process left).
        assert await wait_for(lambda: DIED in caplog.text), caplog.text
        await harness.assert_no_stray_processes()
        release.set()
        result = await run

    assert result.output == "done: found it"  # the tool's result was kept
    assert source_of(result.all_messages()) == "replay"
    assert user_prompts(harness) == ["call slow_lookup"]
    assert [result.text for result in harness.backend.requests[-1].tool_results()] == ["found it"]
    await harness.assert_recovers(idle_sessions=1)


async def test_cli_killed_while_an_approval_is_asked_the_approved_call_runs_in_a_new_session(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.backend.set_brain(FunctionModel(tool_brain))
    agent: Agent[None, str | DeferredToolRequests] = Agent(harness.model, output_type=[str, DeferredToolRequests])
    calls: list[str] = []

    @agent.tool_plain(requires_approval=True)
    def delete_files() -> str:
        calls.append("delete_files")
        return "deleted"

    first = await agent.run("call delete_files")
    assert isinstance(first.output, DeferredToolRequests)
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        os.kill(await harness.wait_for_new_cli(), signal.SIGKILL)
        assert await wait_for(lambda: DIED in caplog.text), caplog.text
    await harness.assert_no_stray_processes()

    [call] = first.output.approvals
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
    )
    assert second.output == "done: deleted"
    assert calls == ["delete_files"]
    assert source_of(second.all_messages()) == "replay"
    assert user_prompts(harness) == ["call delete_files"]
    assert [result.text for result in harness.backend.requests[-1].tool_results()] == ["deleted"]
    await harness.assert_recovers(idle_sessions=1)


async def test_cli_killed_while_streaming_fails_the_run_naming_the_signal(harness: Harness) -> None:
    harness.backend.fail_next(Failure.stall())
    agent = Agent(harness.model)

    async def stream() -> None:
        async with agent.run_stream("hello") as response:
            async for _ in response.stream_text():
                pass

    task = asyncio.create_task(stream())
    assert await wait_for(lambda: len(harness.backend.requests) == 1)
    os.kill(await harness.wait_for_new_cli(), signal.SIGKILL)
    with pytest.raises(CLIProcessError) as caught:
        await task

    assert caught.value.exit_code == -signal.SIGKILL
    assert "killed by SIGKILL (exit status -9)" in str(caught.value)
    assert "Check stderr output for details" not in str(caught.value)
    await harness.assert_recovers()
