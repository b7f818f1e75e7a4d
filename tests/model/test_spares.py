"""Spare CLI sessions, pre-warming and the process cap: the pool's own logic, on the in-memory CLI (the real CLI's
part, a spare that dies or leaves nothing behind, stays in ``test_spares_cli.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model._process.clock import call_at
from claudecode_model._process.slots import ProcessSlots
from claudecode_model._sessions import pool as pool_module
from claudecode_model._sessions import session as session_module
from claudecode_model._sessions.loop_pauses import pauses
from claudecode_model.exceptions import CLITimeoutError
from claudecode_model.testing import ScriptedCLI
from tests._support.agents import agent_with_probe
from tests._support.cli_script import calling, tool_then_text
from tests._support.polling import wait_for
from tests._support.responses import session_of, source_of


@pytest.fixture
def cli() -> ScriptedCLI:
    return tool_then_text("probe")


@pytest.fixture
async def spare_model(cli: ScriptedCLI) -> AsyncIterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1)
    yield model
    await model.aclose()


async def test_a_spare_starts_after_its_delay_not_during_the_turn(
    spare_model: ClaudeCodeModel, cli: ScriptedCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "SPARE_START_DELAY", 1.0)
    agent, _ = agent_with_probe(spare_model, lambda: cli.live)
    await agent.run("one")
    assert cli.live == 1  # the run returned before its spare started
    assert await wait_for(lambda: cli.live == 2)  # then it starts by itself


async def test_an_async_programs_loop_never_pauses_and_its_spares_keep_their_delay(
    cli: ScriptedCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "SPARE_START_DELAY", 0.3)  # the default: the clock looks at the loop then
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1)
    agent, _ = agent_with_probe(model, lambda: cli.live)
    try:
        await agent.run("one")
        assert await wait_for(lambda: cli.live == 2)  # its spare, once the delay ended
        await clock_passed(time.monotonic())  # the clock has looked at the loop: running
        assert not pauses(asyncio.get_running_loop())

        model._resources.pool.spare_delay = 600.0  # the replacement's delay does not end within the test
        second = await agent.run("two")

        assert source_of(second) == "spare"
        assert cli.live == 2  # the run returned without starting its replacement spare, nor waiting for it
    finally:
        await model.aclose()


async def clock_passed(when: float) -> None:
    """Once the pools' clock has run every callback due at or before ``when`` (it runs them in order)."""
    loop = asyncio.get_running_loop()
    passed = loop.create_future()

    def tell() -> None:
        loop.call_soon_threadsafe(passed.set_result, None)

    call_at(when, tell)
    await passed


async def test_prewarm_starts_a_delayed_spare_at_once_and_closing_cancels_one(
    cli: ScriptedCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "SPARE_START_DELAY", 600.0)
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1)
    agent, _ = agent_with_probe(model, lambda: cli.live)
    await agent.run("one")
    assert await model.prewarm(agent)  # did not wait out the delay
    assert cli.live == 2
    second = await agent.run("two")
    assert source_of(second) == "spare"
    assert cli.live == 2  # the replacement waits for its delay (it joins the idle budget when it starts)
    await model.aclose()  # cancels it: nothing was started
    assert cli.live == 0
    assert len(cli.opened) == 2


async def test_a_spare_of_another_signature_is_not_claimed(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1, keep_sessions=4)  # room for both agents' CLIs
    try:
        agent, _ = agent_with_probe(model, lambda: cli.live, "Be brief.")
        other, _ = agent_with_probe(model, lambda: cli.live, "Be verbose.")
        assert await model.prewarm(agent)

        assert source_of(await other.run("x")) == "fresh"
        assert source_of(await agent.run("y")) == "spare"
    finally:
        await model.aclose()


async def test_idle_spares_are_reaped(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1, session_idle_timeout=0.5, keep_sessions=1)
    try:
        agent, _ = agent_with_probe(model, lambda: cli.live)
        assert await model.prewarm(agent)
        assert cli.live == 1
        assert await wait_for(lambda: cli.live == 0)  # its idle timer stops it, no request needed
    finally:
        await model.aclose()


async def test_concurrent_claims_of_one_spare_one_wins(spare_model: ClaudeCodeModel, cli: ScriptedCLI) -> None:
    agent, _ = agent_with_probe(spare_model, lambda: cli.live)
    assert await spare_model.prewarm(agent)

    results = await asyncio.gather(agent.run("a"), agent.run("b"))

    assert sorted(source_of(result) for result in results) == ["fresh", "spare"]
    assert [result.output for result in results] == ["tool said p", "tool said p"]


async def test_without_spares_nothing_is_pre_started(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    try:
        agent, _ = agent_with_probe(model, lambda: cli.live)
        assert not await model.prewarm(agent)
        first = await agent.run("one")
        await asyncio.sleep(0.5)
        assert cli.live == 1  # only the kept session of the conversation
        assert source_of(first) == "fresh"
        second = await agent.run("two")
        assert source_of(second) == "rewound"  # the kept CLI serves it: no process was started for it
        assert len(cli.opened) == 1
        assert source_of(await agent.run("three", message_history=second.all_messages())) == "live"
        # The first conversation's CLI serves the second now: its follow-up replays its history in a new CLI.
        assert source_of(await agent.run("four", message_history=first.all_messages())) == "replay"
    finally:
        await model.aclose()


class _PeakSlots(ProcessSlots):
    """Start slots that remember how many were taken at most."""

    peak = 0

    async def acquire(self, evict: Callable[[], bool]) -> None:
        await super().acquire(evict)
        self.peak = max(self.peak, self.used)


async def test_cli_starts_beyond_the_start_bound_wait_their_turn(
    cli: ScriptedCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _PeakSlots(1)
    monkeypatch.setattr(session_module, "starting_slots", lambda: gate)
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent, _ = agent_with_probe(model, lambda: cli.live)
    try:
        results = await asyncio.gather(*(agent.run(f"run {index}") for index in range(3)))
    finally:
        await model.aclose()
    assert [result.output for result in results] == ["tool said p"] * 3
    assert len({session_of(result) for result in results}) == 3  # three new CLI sessions...
    assert gate.peak == 1  # ...started one at a time
    assert gate.used == 0


async def test_the_process_cap_makes_requests_wait_and_times_out_clearly() -> None:
    def turn(message: dict[str, Any]) -> Any:
        if message["message"]["content"][0]["text"] == "hold":
            return [calling("hold"), lambda results: f"tool said {results[-1]}"]
        return "no tools"

    cli = ScriptedCLI(turn)
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0, max_processes=1)
    release = asyncio.Event()
    agent = Agent(model, instructions="Be brief.")
    running: list[int] = []

    @agent.tool_plain
    async def hold() -> str:
        """Wait."""
        running.append(cli.live)
        await release.wait()
        return "held"

    plain = Agent(model, instructions="No tools here.")
    try:
        busy = asyncio.create_task(agent.run("hold"))
        assert await wait_for(lambda: bool(running))
        with pytest.raises(CLITimeoutError, match="max_processes"):
            await plain.run("times out", model_settings=ClaudeCodeModelSettings(claude_code_timeout=0.5))

        waiting = asyncio.create_task(plain.run("waits"))
        await asyncio.sleep(1.0)
        assert not waiting.done()  # no slot: it waits
        assert cli.live == 1
        release.set()
        assert (await busy).output == "tool said held"
        assert (await waiting).output == "no tools"  # the idle session was stopped to make room
    finally:
        release.set()
        await model.aclose()


async def test_a_turn_parked_for_an_approval_holds_its_slot_and_is_never_a_spare() -> None:
    cli = tool_then_text("delete")
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1, max_processes=1)
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, instructions="Be brief.", output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete() -> str:
        """Delete."""
        return "deleted"

    try:
        first = await agent.run("delete")
        assert isinstance(first.output, DeferredToolRequests)
        assert source_of(first) == "fresh"
        assert cli.live == 1  # the parked turn's CLI, and no spare beside it

        # A new conversation of the same agent neither claims the parked process nor stops it: it waits for a slot.
        with pytest.raises(CLITimeoutError, match="max_processes"):
            await agent.run("another", model_settings=ClaudeCodeModelSettings(claude_code_timeout=0.5))

        [call] = first.output.approvals
        second = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )
        assert second.output == "tool said deleted"
        assert session_of(second) == session_of(first)  # the parked turn went on
        third = await agent.run("again")  # the idle session serves it, its conversation rewound to empty
        assert isinstance(third.output, DeferredToolRequests)
        assert source_of(third) == "rewound"
        assert session_of(third) == session_of(first)
        assert len(cli.opened) == 1
    finally:
        await model.aclose()
