"""The failure matrix: every failure mode through the real Claude Code CLI against the offline backend.

Every case runs ``RUNS`` times (``RELIABILITY_RUNS``, default 3). Each run checks three things: the run ends
with a typed error or the correct answer; nothing is left behind (no process, temp entry or file descriptor);
the same model instance then answers correctly again (``Harness.assert_recovers``).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import pytest
from pydantic_ai import Agent, ModelHTTPError, ModelRetry
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelServerError,
    UnexpectedModelBehavior,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel

from claudecode_model import (
    ClaudeCodeAuthenticationError,
    ClaudeCodeConnectionError,
    ClaudeCodeModel,
    ClaudeCodeModelSettings,
    ClaudeCodeOverloadedError,
    ClaudeCodeRateLimitError,
    ClaudeCodeServerError,
    CLIProcessError,
    CLITimeoutError,
)
from claudecode_model.testing import Failure
from tests._support.polling import wait_for
from tests._support.processes import cmdline, live_descendants
from tests._support.reliability import add_blocking_tool, brain

if TYPE_CHECKING:
    from tests.reliability.conftest import Harness

pytestmark = pytest.mark.cli

RUNS = int(os.environ.get("RELIABILITY_RUNS", "3"))
"""How often each case runs (``RELIABILITY_RUNS`` overrides; the matrix costs about 2.5 s per case and run)."""
run = pytest.mark.parametrize("run", range(RUNS), ids=[f"run{i}" for i in range(RUNS)])
both_modes = pytest.mark.parametrize("harness", ["agent", "cli"], indirect=True)
"""Cases whose tools run the same whoever runs them: once with pydantic-ai running the tools, once Claude Code."""
agent_mode = pytest.mark.parametrize("harness", ["agent"], indirect=True)


# --- answers ------------------------------------------------------------------------------------------------


@run
@both_modes
async def test_success(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)

    @agent.tool_plain
    def lookup() -> str:
        return "found it"

    result = await agent.run("call lookup")

    assert result.output == "done: found it"
    assert [r.text for r in harness.backend.last_request.tool_results()] == ["found it"]
    await harness.assert_recovers(idle_sessions=1)


@run
async def test_tool_exception_reaches_claude_and_the_run_answers(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)

    @agent.tool_plain
    def explode() -> str:
        raise RuntimeError("the disk is on fire")

    result = await agent.run("call explode")

    assert result.output == "done: the disk is on fire"
    [tool_result] = harness.backend.last_request.tool_results()
    assert tool_result.is_error
    await harness.assert_recovers(idle_sessions=1)


@run
@agent_mode
async def test_tool_exception_ends_the_run_as_with_any_pydantic_ai_model(run: int, harness: Harness) -> None:
    def agent_with_exploding_tool(model: Model) -> Agent[None, str]:
        agent = Agent(model)

        @agent.tool_plain
        def explode() -> str:
            raise RuntimeError("the disk is on fire")

        return agent

    with pytest.raises(RuntimeError, match="the disk is on fire"):  # the reference: pydantic-ai's own FunctionModel
        await agent_with_exploding_tool(FunctionModel(brain)).run("call explode")

    with pytest.raises(RuntimeError, match="the disk is on fire"):
        await agent_with_exploding_tool(harness.model).run("call explode")

    assert not harness.backend.last_request.tool_results(), "Claude never got a result"
    await harness.assert_recovers()  # the turn that waited for the result was closed at once


async def _run_flaky_tool(model: object) -> tuple[BaseException | None, int]:
    """Run an agent whose tool always asks to be retried (``retries=2``); the error and the number of calls."""
    agent = Agent(model)  # type: ignore[call-overload]
    calls: list[int] = []

    @agent.tool_plain(retries=2)
    def flaky() -> str:
        calls.append(1)
        raise ModelRetry("the service is busy, try again")

    try:
        await agent.run("call flaky")
    except UnexpectedModelBehavior as error:
        return error, len(calls)
    return None, len(calls)


@run
@both_modes
async def test_model_retry_exhausted_ends_the_run_like_pydantic_ai_does(run: int, harness: Harness) -> None:
    # The same agent on pydantic-ai's own FunctionModel, with the same (stubborn) brain, is the reference.
    expected_error, expected_calls = await _run_flaky_tool(FunctionModel(brain))
    assert expected_error is not None
    assert expected_calls == 3

    error, calls = await _run_flaky_tool(harness.model)

    assert isinstance(error, UnexpectedModelBehavior)
    assert str(error).startswith("Tool 'flaky' exceeded max retries count of 2")
    assert str(expected_error).startswith(str(error))
    assert calls == expected_calls
    await harness.assert_recovers()


# --- API errors ---------------------------------------------------------------------------------------------

HTTP_ERRORS = [
    pytest.param(401, ClaudeCodeAuthenticationError, ModelAuthenticationError, id="401"),
    pytest.param(429, ClaudeCodeRateLimitError, ModelRateLimitError, id="429"),
    pytest.param(500, ClaudeCodeServerError, ModelServerError, id="500"),
    pytest.param(529, ClaudeCodeOverloadedError, ModelOverloadedError, id="529"),
]


@run
@pytest.mark.parametrize(("status", "error_type", "pydantic_ai_type"), HTTP_ERRORS)
async def test_api_error_status_is_a_typed_model_http_error(
    run: int, status: int, error_type: type[Exception], pydantic_ai_type: type[Exception], harness: Harness
) -> None:
    harness.backend.fail_next(Failure.http(status, f"injected failure {status}"))

    with pytest.raises(error_type) as caught:
        await Agent(harness.model).run("hello")

    error = caught.value
    assert isinstance(error, ModelHTTPError)
    assert isinstance(error, pydantic_ai_type)
    assert error.status_code == status
    assert f"injected failure {status}" in str(error.body)
    assert len(harness.backend.requests) == 1, "CLAUDE_CODE_MAX_RETRIES=0: the CLI does not retry"
    await harness.assert_recovers()


@run
async def test_transient_overload_retried_by_the_cli_gives_the_answer(run: int, harness: Harness) -> None:
    model = ClaudeCodeModel(
        env={**harness.backend.cli_env(), "CLAUDE_CODE_MAX_RETRIES": "1"}, tool_execution="cli", spare_sessions=0
    )
    harness.backend.fail_next(Failure.http(529))
    try:
        result = await Agent(model).run("hello")
    finally:
        await model.aclose()

    assert result.output == "echo: hello"
    assert len(harness.backend.requests) == 2
    await harness.assert_recovers()


# --- broken streams -----------------------------------------------------------------------------------------


@run
@pytest.mark.parametrize("failure", [Failure.sse_error(), Failure.malformed_sse()], ids=["sse_error", "malformed_sse"])
async def test_a_broken_stream_once_the_cli_falls_back_to_a_plain_request(
    run: int, failure: Failure, harness: Harness
) -> None:
    harness.backend.fail_next(failure)

    result = await Agent(harness.model).run("hello")

    assert result.output == "echo: hello"
    assert [r.stream for r in harness.backend.requests] == [True, False]
    await harness.assert_recovers(idle_sessions=1)


@run
async def test_sse_error_then_failed_fallback_is_a_typed_error(run: int, harness: Harness) -> None:
    harness.backend.fail_next(Failure.sse_error("overloaded_error", "Overloaded"), count=2)

    with pytest.raises(ClaudeCodeOverloadedError) as caught:
        await Agent(harness.model).run("hello")

    assert caught.value.status_code == 529
    assert [r.stream for r in harness.backend.requests] == [True, False]
    await harness.assert_recovers()


@run
async def test_malformed_sse_then_malformed_fallback_is_a_connection_error(run: int, harness: Harness) -> None:
    harness.backend.fail_next(Failure.malformed_sse(), count=2)

    with pytest.raises(ClaudeCodeConnectionError) as caught:
        await Agent(harness.model).run("hello")

    assert isinstance(caught.value, ModelConnectionError)
    assert "JSON" in str(caught.value)
    await harness.assert_recovers()


# --- the CLI process dies -----------------------------------------------------------------------------------


@run
async def test_cli_killed_during_a_tool_call(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)
    blocking = add_blocking_tool(agent)

    task = asyncio.create_task(agent.run("call wait_forever"))
    await asyncio.wait_for(blocking.started.wait(), 60)
    os.kill(await harness.wait_for_new_cli(), signal.SIGKILL)

    with pytest.raises(CLIProcessError) as caught:
        await task

    assert caught.value.exit_code == -signal.SIGKILL
    assert blocking.cancelled.is_set(), "the tool call in flight was cancelled"
    await harness.assert_recovers()


@run
async def test_cli_killed_while_waiting_for_the_api(run: int, harness: Harness) -> None:
    harness.backend.fail_next(Failure.stall())
    task = asyncio.create_task(Agent(harness.model).run("hello"))
    assert await wait_for(lambda: len(harness.backend.requests) == 1)
    os.kill(await harness.wait_for_new_cli(), signal.SIGKILL)

    with pytest.raises(CLIProcessError) as caught:
        await task

    assert caught.value.exit_code == -signal.SIGKILL
    await harness.assert_recovers()


@run
async def test_cli_killed_between_turns_the_conversation_continues(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)
    first = await agent.run("first question")
    idle_cli = await harness.wait_for_new_cli()  # kept for the next turn
    os.kill(idle_cli, signal.SIGKILL)
    assert await wait_for(lambda: not os.path.exists(f"/proc/{idle_cli}")), "reaped"

    second = await agent.run("second question", message_history=first.all_messages())

    assert second.output == "echo: second question"
    assert "first question" in harness.backend.last_request.user_texts()
    await harness.assert_recovers(idle_sessions=1)


@run
async def test_ipc_bridge_killed_during_a_tool_call(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)
    blocking = add_blocking_tool(agent)

    @agent.tool_plain
    def lookup() -> str:
        return "found it"

    harness.model.set_agent_toolsets(agent._function_toolset, transport="stdio")
    task = asyncio.create_task(agent.run("call wait_forever"))
    await asyncio.wait_for(blocking.started.wait(), 60)
    [bridge] = [pid for pid in live_descendants() if "claudecode_model.ipc.bridge" in cmdline(pid)]
    os.kill(bridge, signal.SIGKILL)

    # Claude Code reports the broken tool server to Claude as the tool's error; Claude answers with it.
    result = await asyncio.wait_for(task, 60)

    assert result.output == "done: Connection closed"
    assert harness.backend.last_request.tool_results()[-1].is_error
    assert blocking.cancelled.is_set(), "the tool call in flight was cancelled"
    # The conversation goes on in the same CLI, which starts a new bridge: tools work again.
    follow_up = await agent.run("call lookup", message_history=result.all_messages())
    assert follow_up.output == "done: found it"
    session = follow_up.all_messages()[-1].provider_details["session_id"]  # type: ignore[union-attr,index]
    assert session == result.all_messages()[-1].provider_details["session_id"]  # type: ignore[union-attr,index]
    await harness.assert_recovers(idle_sessions=1)


# --- cancellation and timeouts ------------------------------------------------------------------------------


CANCELS_PER_RUN = 2


@run
@both_modes
@pytest.mark.parametrize("mode", ["run", "run_stream"])
async def test_cancellation_at_random_points(
    run: int, mode: str, harness: Harness, record_property: Callable[[str, object], None]
) -> None:
    rng = random.Random(f"cancel-{mode}-{run}")
    agent = Agent(harness.model)
    tool_calls: list[str] = []

    @agent.tool_plain
    async def slow() -> str:
        tool_calls.append("started")
        await asyncio.sleep(0.3)
        tool_calls.append("finished")
        return "slept"

    async def go() -> str:
        if mode == "run":
            return (await agent.run("call slow")).output
        async with agent.run_stream("call slow") as stream:
            return await stream.get_output()

    # One whole run first: its duration on this machine scales the random cancel points.
    started = time.monotonic()
    assert await go() == "done: slept"
    duration = time.monotonic() - started
    await harness.model.aclose()

    outcomes = []
    for _ in range(CANCELS_PER_RUN):
        delay = rng.uniform(0.0, 1.1) * duration
        harness.backend.reset()
        tool_calls.clear()
        task = asyncio.create_task(go())
        done, _ = await asyncio.wait({task}, timeout=delay)
        if done:
            assert task.result() == "done: slept"
            outcomes.append(f"{delay:.2f}s: finished first")
        else:
            phase = f"{len(harness.backend.requests)} API requests, tool {'/'.join(tool_calls) or 'not called'}"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            outcomes.append(f"{delay:.2f}s: cancelled after {phase}")
        # A cancel that lands after the CLI finished its turn (while pydantic-ai wraps up) leaves a clean session,
        # kept for a next turn like any other: bounded by keep_sessions and stopped by aclose().
        assert len(harness.model._resources.pool) <= 1
        await harness.assert_no_stray_processes(idle_sessions=len(harness.model._resources.pool))
        await harness.model.aclose()
    record_property("cancel_points", "; ".join(outcomes))
    await harness.assert_recovers()


@run
@pytest.mark.parametrize("setting", ["timeout", "claude_code_timeout"])
async def test_timeout_with_a_stalled_api(run: int, setting: str, harness: Harness) -> None:
    # The timed request continues a live CLI: the timeout covers the CLI's start too, and a start slower than the
    # timeout (a loaded machine) would end the run before the stalled request, leaving the stall for the next one.
    agent = Agent(harness.model)
    first = await agent.run("hello")
    cli = await harness.wait_for_new_cli()
    harness.backend.fail_next(Failure.stall())

    with pytest.raises(CLITimeoutError) as caught:
        await agent.run(
            "still there?",
            message_history=first.all_messages(),
            model_settings=cast(ClaudeCodeModelSettings, {setting: 1.0}),
        )

    assert caught.value.timeout == 1.0
    assert isinstance(caught.value, TimeoutError)
    assert len(harness.backend.requests) == 2, "the timed request reached the backend and stalled there"
    assert await wait_for(lambda: cli not in harness.new_cli_processes()), "the timed-out CLI was stopped"
    await harness.assert_recovers()


@run
async def test_timeout_during_a_tool_call(run: int, harness: Harness) -> None:
    agent = Agent(harness.model)
    blocking = add_blocking_tool(agent)
    # As above: a live CLI, so that the timeout runs out during the tool call, not during a slow CLI start.
    first = await agent.run("hello")

    with pytest.raises(CLITimeoutError):
        await agent.run("call wait_forever", message_history=first.all_messages(), model_settings={"timeout": 2})

    assert blocking.cancelled.is_set(), "the tool call in flight was cancelled"
    await harness.assert_recovers()
