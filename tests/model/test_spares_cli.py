"""Spare CLI sessions, pre-warming and the process cap, through the real CLI and the offline backend."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import project_key_for_directory
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, SQLiteSessionStore
from claudecode_model._process.slots import ProcessSlots
from claudecode_model._sessions import pool as pool_module
from claudecode_model._sessions import session as session_module
from claudecode_model.exceptions import CLITimeoutError
from claudecode_model.testing import OfflineBackend
from tests._support.processes import live_descendants, process_table
from tests._support.responses import details

pytestmark = pytest.mark.cli


def tool_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the first offered tool once, then answer with what it returned."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f"tool said {returns[0].content}")])
    if info.function_tools:
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])
    return ModelResponse(parts=[TextPart("no tools")])


@pytest.fixture
def backend(claude_backend: OfflineBackend) -> OfflineBackend:
    claude_backend.set_brain(FunctionModel(tool_then_text))
    return claude_backend


def cli_children() -> set[int]:
    """The CLI processes this test process started (its direct children)."""
    me = os.getpid()
    return {p.pid for p in process_table() if p.alive and p.ppid == me}


def agent_with_probe(
    model: ClaudeCodeModel, instructions: str = "Be brief."
) -> tuple[Agent[None, str], list[set[int]]]:
    """An agent whose tool records the CLI processes alive while it runs."""
    agent = Agent(model, instructions=instructions)
    seen: list[set[int]] = []

    @agent.tool_plain
    async def probe() -> str:
        """Report."""
        seen.append(cli_children())
        return "p"

    return agent, seen


def session_of(result: Any) -> str:
    details = result.all_messages()[-1].provider_details or {}
    return str(details.get("session_id"))


def source_of(result: Any) -> str:
    details = result.all_messages()[-1].provider_details or {}
    return str(details.get("session_source"))


@pytest.fixture
async def spare_model(backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=1)
    yield model
    await model.aclose()


async def wait_until(condition: Any, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_the_next_new_conversation_claims_the_spare_without_a_spawn(spare_model: ClaudeCodeModel) -> None:
    agent, seen = agent_with_probe(spare_model)
    first = await agent.run("one")
    assert source_of(first) == "fresh"
    assert first.output == "tool said p"
    assert await spare_model.prewarm(agent)  # the spare the first run left is up (nothing more is started)
    before = cli_children()
    assert len(before) == 2  # the first conversation's kept session and the spare

    second = await agent.run("two")

    assert source_of(second) == "spare"
    assert second.output == "tool said p"
    assert seen[-1] == before  # while the second conversation ran its tool, no process had been started
    second_details = details(second.all_messages()[-1])
    assert isinstance(second_details.get("first_token_seconds"), float)
    assert second_details["session_id"] != details(first.all_messages()[-1])["session_id"]


async def test_a_spare_starts_after_its_delay_not_during_the_turn(
    spare_model: ClaudeCodeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "SPARE_START_DELAY", 1.0)
    agent, _ = agent_with_probe(spare_model)
    await agent.run("one")
    assert len(cli_children()) == 1  # the run returned before its spare started
    await wait_until(lambda: len(cli_children()) == 2)  # then it starts by itself


async def test_prewarm_starts_a_delayed_spare_at_once_and_closing_cancels_one(
    backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "SPARE_START_DELAY", 600.0)
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=1)
    agent, _ = agent_with_probe(model)
    await agent.run("one")
    assert await model.prewarm(agent)  # did not wait out the delay
    assert len(cli_children()) == 2
    second = await agent.run("two")
    assert source_of(second) == "spare"
    assert len(cli_children()) == 2  # the replacement waits for its delay
    await model.aclose()  # cancels it: nothing was started
    assert cli_children() == set()


async def test_a_spare_of_another_signature_is_not_claimed(spare_model: ClaudeCodeModel) -> None:
    agent, _ = agent_with_probe(spare_model, "Be brief.")
    other, _ = agent_with_probe(spare_model, "Be verbose.")
    assert await spare_model.prewarm(agent)

    assert source_of(await other.run("x")) == "fresh"
    assert source_of(await agent.run("y")) == "spare"


async def test_a_spare_that_died_while_idle_is_replaced_not_used(spare_model: ClaudeCodeModel) -> None:
    agent, seen = agent_with_probe(spare_model)
    assert await spare_model.prewarm(agent)
    (spare_pid,) = cli_children()
    os.kill(spare_pid, signal.SIGKILL)
    await wait_until(lambda: spare_pid not in cli_children())

    result = await agent.run("after the spare died")

    assert result.output == "tool said p"
    assert spare_pid not in seen[-1]
    assert source_of(result) in ("spare", "fresh")  # a replacement spare, or a process of its own
    assert await spare_model.prewarm(agent)  # and a live spare exists again


async def test_idle_spares_are_reaped(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=1, session_idle_timeout=0.5, keep_sessions=0)
    try:
        agent, _ = agent_with_probe(model)
        assert await model.prewarm(agent)
        (spare_pid,) = cli_children()
        await wait_until(lambda: spare_pid not in cli_children())  # its idle timer stops it, no request needed
    finally:
        await model.aclose()


async def test_concurrent_claims_of_one_spare_one_wins(spare_model: ClaudeCodeModel) -> None:
    agent, _ = agent_with_probe(spare_model)
    assert await spare_model.prewarm(agent)

    results = await asyncio.gather(agent.run("a"), agent.run("b"))

    assert sorted(source_of(result) for result in results) == ["fresh", "spare"]
    assert [result.output for result in results] == ["tool said p", "tool said p"]


async def test_prewarm_then_run_and_close_leaves_nothing(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env())
    agent, _ = agent_with_probe(model)
    assert await model.prewarm(agent)
    assert len(cli_children()) == 1
    assert len(backend.requests) == 0  # nothing reached Claude

    result = await agent.run("go")

    assert source_of(result) == "spare"
    assert result.output == "tool said p"
    await model.aclose()
    assert not live_descendants()


async def test_without_spares_nothing_is_pre_started(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        agent, _ = agent_with_probe(model)
        assert not await model.prewarm(agent)
        first = await agent.run("one")
        await asyncio.sleep(0.5)
        assert len(cli_children()) == 1  # only the kept session of the conversation
        assert source_of(first) == "fresh"
        assert source_of(await agent.run("two")) == "fresh"
        follow_up = await agent.run("three", message_history=first.all_messages())
        assert source_of(follow_up) == "live"
    finally:
        await model.aclose()


class _PeakSlots(ProcessSlots):
    """Start slots that remember how many were taken at most."""

    peak = 0

    async def acquire(self, evict: Callable[[], bool]) -> None:
        await super().acquire(evict)
        self.peak = max(self.peak, self.used)


async def test_cli_starts_beyond_the_start_bound_wait_their_turn(
    backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _PeakSlots(1)
    monkeypatch.setattr(session_module, "starting_slots", lambda: gate)
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    agent, _ = agent_with_probe(model)
    try:
        results = await asyncio.gather(*(agent.run(f"run {index}") for index in range(3)))
    finally:
        await model.aclose()
    assert [result.output for result in results] == ["tool said p"] * 3
    assert len({session_of(result) for result in results}) == 3  # three new CLI processes...
    assert gate.peak == 1  # ...started one at a time
    assert gate.used == 0


async def test_the_process_cap_makes_requests_wait_and_times_out_clearly(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, max_processes=1)
    release = asyncio.Event()
    agent = Agent(model, instructions="Be brief.")
    running: list[set[int]] = []

    @agent.tool_plain
    async def hold() -> str:
        """Wait."""
        running.append(cli_children())
        await release.wait()
        return "held"

    plain = Agent(model, instructions="No tools here.")
    try:
        busy = asyncio.create_task(agent.run("hold"))
        await wait_until(lambda: bool(running))
        with pytest.raises(CLITimeoutError, match="max_processes"):
            await plain.run("times out", model_settings=ClaudeCodeModelSettings({"claude_code_timeout": 0.5}))

        waiting = asyncio.create_task(plain.run("waits"))
        await asyncio.sleep(1.0)
        assert not waiting.done()  # no slot: it waits
        assert len(cli_children()) == 1
        release.set()
        assert (await busy).output == "tool said held"
        assert (await waiting).output == "no tools"  # the idle session was stopped to make room
    finally:
        release.set()
        await model.aclose()


async def test_a_turn_parked_for_an_approval_holds_its_slot_and_is_never_a_spare(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=1, max_processes=1)
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
        assert len(cli_children()) == 1  # the parked turn's CLI, and no spare beside it

        # A new conversation of the same agent neither claims the parked process nor stops it: it waits for a slot.
        with pytest.raises(CLITimeoutError, match="max_processes"):
            await agent.run("another", model_settings=ClaudeCodeModelSettings({"claude_code_timeout": 0.5}))

        [call] = first.output.approvals
        second = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )
        assert second.output == "tool said deleted"
        assert session_of(second) == session_of(first)  # the parked turn went on
        third = await agent.run("again")  # the idle session is stopped to make room
        assert isinstance(third.output, DeferredToolRequests)
        assert source_of(third) == "fresh"
        assert session_of(third) != session_of(first)
    finally:
        await model.aclose()


async def test_a_spare_mirrors_its_conversation_into_the_session_store(backend: OfflineBackend, tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    model = ClaudeCodeModel(env=backend.cli_env(), session_store=store)
    agent, _ = agent_with_probe(model)
    try:
        assert await model.prewarm(agent)
        result = await agent.run("remember the word kiwi")
        assert source_of(result) == "spare"
    finally:
        await model.aclose()
    try:
        key = {"project_key": project_key_for_directory(os.getcwd()), "session_id": session_of(result)}
        entries = await store.load(key)  # type: ignore[arg-type]
    finally:
        await store.aclose()
    assert entries is not None
    assert "remember the word kiwi" in json.dumps(entries)


def test_interpreter_exit_leaves_no_spare(backend: OfflineBackend, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    script = tmp_path / "exit_with_spare.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, json, sys
            from pydantic_ai import Agent
            from claudecode_model import ClaudeCodeModel

            env = json.loads(sys.argv[1])
            model = ClaudeCodeModel(env=env)
            loop = asyncio.new_event_loop()
            assert loop.run_until_complete(model.prewarm(Agent(model, instructions="x")))
            print("ready", flush=True)
            # exit without closing the model or the loop
            """
        )
    )
    import json

    env = {**backend.cli_env(), "SPARE_TEST_MARKER": marker}
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(env)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ready", done.stderr

    def marked() -> list[int]:
        found = []
        for process in process_table():
            try:
                environ = Path(f"/proc/{process.pid}/environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in environ and process.alive:
                found.append(process.pid)
        return found

    deadline = time.monotonic() + 10
    while marked():
        assert time.monotonic() < deadline, f"CLI processes left after the interpreter exited: {marked()}"
        time.sleep(0.05)


async def test_a_stdio_transport_spare_serves_the_run_and_closes_its_bridge(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), tool_transport="stdio")
    try:
        agent, seen = agent_with_probe(model)
        assert await model.prewarm(agent)

        result = await agent.run("over the bridge")

        assert source_of(result) == "spare"
        assert result.output == "tool said p"  # the spare's router was bound to this run when it was claimed
        assert seen
    finally:
        await model.aclose()  # the leak guard then checks that no bridge process or IPC file is left
