"""Spares on an event loop that pauses between calls (a ``run_sync`` program's), on stand-in sessions: a spare starts
at once and the call that asked for it returns once its CLI's process exists; a spare still connecting while the loop
is paused is stopped from the clock's thread when it outlives ``session_idle_timeout`` or the idle budget, and at
exit. An async program's spare keeps its delay. The real CLI's part is ``test_paused_loop_spares_cli.py``."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from claudecode_model._sessions import pool as pool_module
from claudecode_model._sessions.idle_budget import IdleBudget
from claudecode_model._sessions.loop_pauses import look_at, pauses
from claudecode_model._sessions.pool import SessionPool
from tests._support.polling import wait_until
from tests.model.test_session_pool import FakeSession


class ConnectingSession(FakeSession):
    """A spare whose CLI process exists and connects only once :attr:`connected` is set; stopping the process sets it
    (from any thread), and the connect then fails."""

    def __init__(self, release: asyncio.Event) -> None:
        super().__init__("spare", release)
        self.connected = asyncio.Event()

    def terminate(self) -> None:
        super().terminate()
        self._ended()

    def kill(self) -> None:
        super().kill()
        self._ended()

    def _ended(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.connected.set)


class Starts:
    """A spare factory: the session is spawned a step after the start, then connects once let (see above)."""

    def __init__(self, *, spawns: bool = True) -> None:
        self.session: ConnectingSession | None = None
        self.spawns = spawns
        self.release = asyncio.Event()
        self.release.set()
        self.let = asyncio.Event()
        """Lets a start that never spawns end (with a session)."""

    async def __call__(self, spawned: Callable[[FakeSession], None]) -> FakeSession:
        await asyncio.sleep(0)
        if not self.spawns:
            await self.let.wait()
        session = self.session = ConnectingSession(self.release)
        spawned(session)
        await session.connected.wait()
        if session.terminated_from is not None or session.killed:
            raise RuntimeError("the CLI ended while it connected")
        return session


@pytest.fixture
def paused_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop that ran a call and was then seen paused (as a run_sync program's between its calls)."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.sleep(0))
        look_at(loop, time.monotonic())
        assert wait_until(lambda: pauses(loop), timeout=10)
        yield loop
    finally:
        loop.close()


def spare_pool(*, budget: IdleBudget | None = None, idle_timeout: float = 300.0) -> SessionPool[FakeSession]:
    # A delay no test waits out: a spare that starts within a test started at once.
    return SessionPool(
        budget=IdleBudget(2) if budget is None else budget,
        idle_timeout=idle_timeout,
        max_spares=1,
        max_spares_total=1,
        spare_delay=600,
    )


def ask_for_a_spare(loop: asyncio.AbstractEventLoop, pool: SessionPool[FakeSession], starts: Starts) -> None:
    """A call that ends with a turn that asks for a spare (what ``CLITurn.finish()`` does)."""

    async def call() -> None:
        assert pool.start_spare("sig", starts)
        await pool.head_start()

    loop.run_until_complete(call())


def close(loop: asyncio.AbstractEventLoop, pool: SessionPool[FakeSession], starts: Starts) -> None:
    async def closing() -> None:
        starts.let.set()
        if starts.session is not None:
            starts.session.connected.set()
        await pool.close_all()

    loop.run_until_complete(closing())


def test_on_a_paused_loop_a_spare_starts_at_once_and_the_call_returns_once_its_cli_exists(
    paused_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "HEAD_START_SECONDS", 60.0)  # no machine is that slow: the spawn ends the wait
    pool, starts = spare_pool(), Starts()

    ask_for_a_spare(paused_loop, pool, starts)

    assert starts.session is not None  # spawned before the call returned, its delay of 600 s not waited out
    assert not starts.session.connected.is_set()  # and connects with the next call
    close(paused_loop, pool, starts)
    assert starts.session.closed


def test_the_wait_for_a_spawn_that_does_not_come_is_bounded(
    paused_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "HEAD_START_SECONDS", 0.05)
    pool, starts = spare_pool(), Starts(spawns=False)

    ask_for_a_spare(paused_loop, pool, starts)  # returns, though nothing was spawned

    assert starts.session is None
    close(paused_loop, pool, starts)


async def test_an_async_programs_spare_keeps_its_delay_and_no_turn_waits_for_it() -> None:
    pool, starts = spare_pool(), Starts()

    assert pool.start_spare("sig", starts)
    await pool.head_start()
    await asyncio.sleep(0.05)

    assert starts.session is None  # waiting for its delay
    assert not pauses(asyncio.get_running_loop())
    await pool.close_all()  # cancels it: nothing was started


def test_the_clock_stops_a_spare_still_connecting_while_its_loop_is_paused(
    paused_loop: asyncio.AbstractEventLoop,
) -> None:
    pool, starts = spare_pool(idle_timeout=0.3), Starts()
    ask_for_a_spare(paused_loop, pool, starts)
    assert starts.session is not None

    assert wait_until(lambda: starts.session is not None and starts.session.terminated_from is not None, timeout=10)

    assert starts.session.terminated_from == "claudecode-model-clock"
    assert claimed_by_the_next_call(paused_loop, pool) is None  # its start failed: never handed out
    assert not pool._stopped  # nothing left for the loop to tidy up
    close(paused_loop, pool, starts)


def test_a_spare_still_connecting_is_stopped_before_the_sdk_would_give_up_its_connect(
    paused_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK times a connect out on the loop's clock, which goes on while the loop is paused: past that, the
    connect fails when the loop runs again, so the clock stops the CLI first (and the next call does not wait)."""
    monkeypatch.setattr(pool_module, "_PAUSED_CONNECT_SECONDS", 0.3)
    pool, starts = spare_pool(idle_timeout=300), Starts()
    ask_for_a_spare(paused_loop, pool, starts)

    assert wait_until(lambda: starts.session is not None and starts.session.terminated_from is not None, timeout=10)

    assert claimed_by_the_next_call(paused_loop, pool) is None
    assert not pool._stopped
    close(paused_loop, pool, starts)


def test_a_spare_still_connecting_pushed_out_by_another_thread_is_stopped_while_its_loop_is_paused(
    paused_loop: asyncio.AbstractEventLoop,
) -> None:
    budget = IdleBudget(1)
    pool, starts = spare_pool(budget=budget), Starts()
    ask_for_a_spare(paused_loop, pool, starts)

    def elsewhere() -> None:
        async def keep_one() -> None:
            other: SessionPool[FakeSession] = SessionPool(budget=budget, idle_timeout=300)
            done = asyncio.Event()
            done.set()
            await other.put(FakeSession("newer", done))
            await other.close_all()

        asyncio.run(keep_one())

    worker = threading.Thread(target=elsewhere, name="other-program-thread")
    worker.start()
    worker.join()

    assert starts.session is not None
    assert starts.session.terminated_from == "other-program-thread"
    assert claimed_by_the_next_call(paused_loop, pool) is None
    assert len(budget) == 0
    close(paused_loop, pool, starts)


def test_exit_kills_a_spare_still_connecting(paused_loop: asyncio.AbstractEventLoop) -> None:
    pool, starts = spare_pool(), Starts()
    ask_for_a_spare(paused_loop, pool, starts)

    pool.kill_all()  # the exit hook's last resort

    assert starts.session is not None
    assert starts.session.killed
    paused_loop.run_until_complete(asyncio.wait(asyncio.all_tasks(paused_loop)))  # its start fails


def claimed_by_the_next_call(loop: asyncio.AbstractEventLoop, pool: SessionPool[FakeSession]) -> FakeSession | None:
    async def next_call() -> FakeSession | None:
        claimed = await pool.claim_spare("sig")
        if others := asyncio.all_tasks() - {asyncio.current_task()}:
            await asyncio.wait(others)  # the failed start's own tidy-up
        return claimed

    return loop.run_until_complete(next_call())
