"""The session pool closes evicted CLI sessions in the background (a benchmark finding): no turn waits for it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, cast

from claude_agent_sdk import SystemMessage

from claudecode_model._sessions import session as session_module
from claudecode_model._sessions.pool import SessionPool
from tests._support.polling import wait_for, wait_until


class FakeSession:
    """Stands in for a CLISession: its close() blocks until released, and it records what happened."""

    def __init__(self, session_id: str, release: asyncio.Event) -> None:
        self.session_id: str | None = session_id
        self.signature = "sig"
        self.seen_digest: str | None = "digest"
        self.loop = asyncio.get_running_loop()
        self.busy = False
        self.closed = False
        self.last_used = time.monotonic()
        self.close_started = False
        self.killed = False
        self.terminated_from: str | None = None
        self._release = release

    @property
    def known_closed(self) -> bool:
        return self.closed

    async def close(self) -> None:
        self.close_started = True
        await self._release.wait()
        self.closed = True

    def kill(self) -> None:
        self.killed = True

    def terminate(self) -> None:
        self.terminated_from = threading.current_thread().name


def fake(session_id: str, release: asyncio.Event) -> FakeSession:
    return FakeSession(session_id, release)


async def second_put(
    first_id: str, second_id: str, *, max_idle: int = 1
) -> tuple[SessionPool[FakeSession], asyncio.Event, FakeSession, FakeSession]:
    """A pool that was given two sessions whose close() blocks until the returned event is set."""
    release = asyncio.Event()
    pool: SessionPool[FakeSession] = SessionPool(max_idle=max_idle, idle_timeout=300)
    first, second = fake(first_id, release), fake(second_id, release)
    await pool.put(first)
    await pool.put(second)  # a put returns although a close() it started cannot finish yet
    await asyncio.sleep(0)
    return pool, release, first, second


async def test_eviction_does_not_wait_for_the_close_and_close_all_does() -> None:
    pool, release, first, second = await second_put("a", "b")  # evicts the older session

    assert first.close_started
    assert not first.closed
    assert len(pool) == 1
    assert pool.take("b", signature="sig", digest="digest") is second
    await pool.put(second)

    release.set()
    await pool.close_all()
    assert first.closed
    assert second.closed
    assert not first.killed


async def test_a_replaced_session_closes_in_the_background() -> None:
    pool, release, old, new = await second_put("same", "same", max_idle=4)

    assert old.close_started
    assert not old.closed
    release.set()
    await pool.close_all()
    assert old.closed
    assert new.closed


async def test_kill_all_also_kills_sessions_still_closing() -> None:
    pool, release, first, second = await second_put("a", "b")

    pool.kill_all()

    assert first.killed
    assert second.killed
    release.set()
    await pool.close_all()


async def test_a_cancelled_background_close_kills_the_process() -> None:
    pool, release, first, _ = await second_put("a", "b")
    [task] = [task for task in asyncio.all_tasks() if task.get_name() == "claude-code-session-close"]

    task.cancel()  # what the event loop does to leftover tasks when it shuts down
    await asyncio.gather(task, return_exceptions=True)

    assert first.killed
    release.set()
    await pool.close_all()


class _RefusingClient:
    """A client whose CLI fails or never answers the warm-up's control request."""

    def __init__(self, *, hang: bool) -> None:
        self.hang = hang
        self.asked = 0

    async def get_context_usage(self) -> dict[str, Any]:
        self.asked += 1
        if self.hang:
            await asyncio.Event().wait()
        raise RuntimeError("control request refused")


async def test_a_failed_or_stuck_warm_up_leaves_the_spare_usable(monkeypatch: Any, caplog: Any) -> None:
    monkeypatch.setattr(session_module, "WARM_UP_TIMEOUT", 0.05)
    for client in (_RefusingClient(hang=False), _RefusingClient(hang=True)):
        with caplog.at_level("DEBUG", logger="claudecode_model._sessions.session"):
            await session_module.warm_up_client(cast("Any", client))  # returns: the spare is handed out as it is
        assert client.asked == 1
    assert sum("warming up a spare CLI session failed" in record.getMessage() for record in caplog.records) == 2


def note(text: str) -> SystemMessage:
    """A turn item that says ``text``."""
    return SystemMessage(subtype=text, data={})


async def test_held_turn_output_waits_for_an_item_that_wakes_the_consumer():
    output = session_module._TurnOutput()
    got: list[Any] = []

    async def consume() -> None:
        while (item := (await output.get())[0]) is not None:
            got.append(item)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    output.put(note("held 1"), wake=False)
    output.put(note("held 2"), wake=False)
    for _ in range(3):
        await asyncio.sleep(0)
    assert got == []  # nothing woke the consumer

    output.put(note("wakes"))
    output.put(None)
    await asyncio.wait_for(consumer, 1)
    assert got == [note("held 1"), note("held 2"), note("wakes")]


async def test_turn_output_items_carry_their_arrival_time():
    output = session_module._TurnOutput()
    before = time.perf_counter()
    output.put(note("first"), wake=False)
    after = time.perf_counter()
    await asyncio.sleep(0.01)

    item, arrived = await output.get()

    assert item == note("first")
    assert before <= arrived <= after


async def test_the_surplus_is_closed_after_its_grace_without_another_request() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(max_idle=1, idle_timeout=300, surplus_idle_timeout=0.3)
    older, newer = fake("older", release), fake("newer", release)
    await pool.put(older)
    await pool.put(newer)
    assert len(pool) == 2  # the surplus is kept for its grace period

    assert await wait_for(lambda: older.closed, within=5)  # by the pool's clock, no put, take or prune

    assert not newer.close_started
    assert older.terminated_from is None  # the loop ran: closed properly on it
    await pool.close_all()


async def test_an_idle_session_is_closed_by_time() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(max_idle=4, idle_timeout=0.3)
    session = fake("a", release)
    await pool.put(session)

    assert await wait_for(lambda: session.closed, within=5)
    assert len(pool) == 0


def test_a_loop_that_does_not_run_gets_its_overdue_processes_stopped_from_the_clock() -> None:
    """A run_sync program between calls: its loop does not run, the pool's clock stops the processes itself, and
    the loop tidies up (closes the sessions properly) the next time it runs."""
    loop = asyncio.new_event_loop()
    try:
        release = asyncio.Event()
        pool: SessionPool[FakeSession] = SessionPool(max_idle=1, idle_timeout=300, surplus_idle_timeout=0.3)

        async def keep_two() -> tuple[Any, Any]:
            release.set()
            older, newer = fake("older", release), fake("newer", release)
            await pool.put(older)
            await pool.put(newer)
            return older, newer

        older, newer = loop.run_until_complete(keep_two())
        assert len(pool) == 2

        assert wait_until(lambda: older.terminated_from is not None, timeout=5)  # the loop is not running

        assert older.terminated_from == "claudecode-model-clock"
        assert newer.terminated_from is None

        async def next_call() -> Any:
            await asyncio.sleep(0.05)  # the tidy-up the clock scheduled runs first
            return pool.take("older", signature="sig", digest="digest")

        assert loop.run_until_complete(next_call()) is None  # a stopped session is never handed out
        assert older.closed
        assert len(pool) == 1
        loop.run_until_complete(pool.close_all())
    finally:
        loop.close()


def test_sessions_of_a_closed_loop_do_not_keep_the_clock_busy() -> None:
    """A model whose event loop is gone (a test's, an earlier asyncio.run()'s) leaves overdue sessions in its pool:
    the clock must not call back again and again for them."""
    loop = asyncio.new_event_loop()
    pool: SessionPool[FakeSession] = SessionPool(max_idle=1, idle_timeout=300, surplus_idle_timeout=0.05)
    ticks: list[float] = []
    tick = pool._tick

    def counted_tick() -> None:
        ticks.append(time.monotonic())
        tick()

    pool._tick = counted_tick  # type: ignore[method-assign]  # count the pool's ticks

    async def keep_two() -> None:
        release = asyncio.Event()
        release.set()
        await pool.put(fake("older", release))
        await pool.put(fake("newer", release))

    loop.run_until_complete(keep_two())
    loop.close()  # the older session is overdue in 0.05 s, on a loop that is gone
    time.sleep(1.0)

    assert len(ticks) <= 6, f"the clock called back {len(ticks)} times in 1 s"
