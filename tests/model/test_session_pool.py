"""The session pool closes evicted CLI sessions in the background (a benchmark finding): no turn waits for it; idle
sessions and spares stay within their budget, the least recently used going first, also across pools and threads."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from claude_agent_sdk import SystemMessage

from claudecode_model._sessions import session as session_module
from claudecode_model._sessions.idle_budget import IdleBudget
from claudecode_model._sessions.pool import SessionPool
from tests._support.polling import wait_for, wait_until


class FakeSession:
    """Stands in for a CLISession: its close() blocks until released, and it records what happened."""

    def __init__(self, session_id: str, release: asyncio.Event) -> None:
        self.session_id: str | None = session_id
        self.signature = "sig"
        self.seen_digest: str | None = "digest"
        self.opening_uuid: str | None = None
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
    first_id: str, second_id: str, *, limit: int = 1
) -> tuple[SessionPool[FakeSession], asyncio.Event, FakeSession, FakeSession]:
    """A pool that was given two sessions whose close() blocks until the returned event is set."""
    release = asyncio.Event()
    pool: SessionPool[FakeSession] = SessionPool(budget=IdleBudget(limit), idle_timeout=300)
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
    pool, release, old, new = await second_put("same", "same", limit=4)

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


async def test_over_the_budget_the_least_recently_used_session_goes_at_once() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(budget=IdleBudget(2), idle_timeout=300)
    oldest, older, newest = fake("oldest", release), fake("older", release), fake("newest", release)
    await pool.put(oldest)
    await pool.put(older)
    assert pool.take("oldest", signature="sig", digest="digest") is oldest  # used again: the most recent now
    await pool.put(oldest)

    await pool.put(newest)
    await asyncio.sleep(0)  # the close runs in the background

    assert older.close_started
    assert not oldest.close_started
    assert not newest.close_started
    assert len(pool) == 2
    await pool.close_all()


async def test_pools_sharing_a_budget_hold_its_limit_together() -> None:
    release = asyncio.Event()
    release.set()
    budget = IdleBudget(2)
    first: SessionPool[FakeSession] = SessionPool(budget=budget, idle_timeout=300)
    second: SessionPool[FakeSession] = SessionPool(budget=budget, idle_timeout=300)
    sessions = [fake(f"s{index}", release) for index in range(4)]
    for index, session in enumerate(sessions):
        await (first if index % 2 == 0 else second).put(session)
        await asyncio.sleep(0)
        assert sum(not s.close_started for s in sessions[: index + 1]) <= 2

    assert [s.close_started for s in sessions] == [True, True, False, False]
    assert len(budget) == 2
    await first.close_all()
    await second.close_all()
    assert len(budget) == 0


async def test_a_budget_of_zero_keeps_nothing() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(
        budget=IdleBudget(0), idle_timeout=300, max_spares=1, max_spares_total=1
    )
    session = fake("a", release)

    await pool.put(session)

    assert session.closed
    assert len(pool) == 0
    assert not pool.start_spare("sig", lambda _: asyncio.sleep(0, result=fake("spare", release)))


async def test_a_spare_that_pushes_another_out_starts_once_that_one_is_gone() -> None:
    release = asyncio.Event()
    budget = IdleBudget(1)
    pool: SessionPool[FakeSession] = SessionPool(
        budget=budget, idle_timeout=300, max_spares=1, max_spares_total=2, spare_delay=0
    )
    older = fake("older", release)

    async def spawn_older(_: object) -> FakeSession:
        return older

    assert pool.start_spare("older-sig", spawn_older)
    assert await pool.wait_spare("older-sig")
    started: list[bool] = []

    async def spawn(_: object) -> FakeSession:
        started.append(older.closed)
        return fake("spare", release)

    assert pool.start_spare("sig", spawn)
    await asyncio.sleep(0.05)
    assert older.close_started
    assert started == []

    release.set()
    assert await pool.claim_spare("sig") is not None
    assert started == [True]
    await pool.close_all()


async def test_a_spare_never_pushes_a_kept_session_out_and_a_kept_session_pushes_a_spare_out() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(
        budget=IdleBudget(1), idle_timeout=300, max_spares=1, max_spares_total=1, spare_delay=0
    )
    kept = fake("kept", release)
    await pool.put(kept)
    started: list[FakeSession] = []

    async def spawn(_: object) -> FakeSession:
        started.append(fake("spare", release))
        return started[-1]

    assert pool.start_spare("sig", spawn)
    assert not await pool.wait_spare("sig")  # the budget holds a kept session: no spare starts
    assert started == []
    assert not kept.close_started

    assert pool.take("kept", signature="sig", digest="digest") is kept
    await pool.prune()  # forgets the spare that did not start
    assert pool.start_spare("sig", spawn)
    assert await pool.wait_spare("sig")  # room: it starts
    await pool.put(kept)  # used since: the spare leaves
    assert await wait_for(lambda: started[0].close_started)
    assert not kept.close_started
    assert len(pool) == 1
    await pool.close_all()


async def test_a_spare_asked_for_before_the_budgets_idle_clis_were_used_does_not_start() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(
        budget=IdleBudget(1), idle_timeout=300, max_spares=1, max_spares_total=1, spare_delay=0.05
    )
    started: list[str] = []

    async def spawn(_: object) -> FakeSession:
        started.append("spare")
        return fake("spare", release)

    assert pool.start_spare("sig", spawn)
    kept = fake("kept", release)
    await pool.put(kept)  # used after the spare was asked for: more useful
    await asyncio.sleep(0.2)

    assert started == []
    assert await pool.claim_spare("sig") is None
    assert not kept.close_started
    await pool.close_all()


def test_a_session_pushed_out_by_another_thread_is_stopped_while_its_loop_does_not_run() -> None:
    """A run_sync program between calls: another thread's model fills the shared budget; the idle session of the
    loop that does not run is stopped at once, and its loop tidies up when it runs again."""
    budget = IdleBudget(1)
    loop = asyncio.new_event_loop()
    try:
        release = asyncio.Event()
        pool: SessionPool[FakeSession] = SessionPool(budget=budget, idle_timeout=300)

        async def keep_one() -> FakeSession:
            release.set()
            session = fake("idle", release)
            await pool.put(session)
            return session

        idle = loop.run_until_complete(keep_one())

        async def elsewhere() -> None:
            other: SessionPool[FakeSession] = SessionPool(budget=budget, idle_timeout=300)
            done = asyncio.Event()
            done.set()
            await other.put(fake("newer", done))
            await other.close_all()

        worker = threading.Thread(target=asyncio.run, args=(elsewhere(),), name="other-program-thread")
        worker.start()
        worker.join()

        assert idle.terminated_from == "other-program-thread"

        assert taken_by_the_next_call(loop, pool, "idle") is None  # a stopped session is never handed out
        assert idle.closed
        assert len(pool) == 0
        loop.run_until_complete(pool.close_all())
    finally:
        loop.close()


def taken_by_the_next_call(loop: asyncio.AbstractEventLoop, pool: SessionPool[FakeSession], session_id: str) -> Any:
    """What a next call on ``loop`` (a ``run_sync`` program's) takes for ``session_id``, once the tidy-up that was
    scheduled on the loop while it did not run has run."""

    async def next_call() -> Any:
        await asyncio.sleep(0.05)
        return pool.take(session_id, signature="sig", digest="digest")

    return loop.run_until_complete(next_call())


async def test_an_idle_session_is_closed_by_time() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(budget=IdleBudget(4), idle_timeout=0.3)
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
        pool: SessionPool[FakeSession] = SessionPool(budget=IdleBudget(2), idle_timeout=0.3)

        async def keep_two() -> tuple[Any, Any]:
            release.set()
            older, newer = fake("older", release), fake("newer", release)
            newer.last_used += 60  # used later: not overdue with the older one
            await pool.put(older)
            await pool.put(newer)
            return older, newer

        older, newer = loop.run_until_complete(keep_two())
        assert len(pool) == 2

        assert wait_until(lambda: older.terminated_from is not None, timeout=5)  # the loop is not running

        assert older.terminated_from == "claudecode-model-clock"
        assert newer.terminated_from is None

        assert taken_by_the_next_call(loop, pool, "older") is None  # a stopped session is never handed out
        assert older.closed
        assert len(pool) == 1
        loop.run_until_complete(pool.close_all())
    finally:
        loop.close()


def test_sessions_of_a_closed_loop_do_not_keep_the_clock_busy() -> None:
    """A model whose event loop is gone (a test's, an earlier asyncio.run()'s) leaves overdue sessions in its pool:
    the clock must not call back again and again for them."""
    loop = asyncio.new_event_loop()
    pool: SessionPool[FakeSession] = SessionPool(budget=IdleBudget(2), idle_timeout=0.05)
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


async def test_a_spare_pushed_out_while_it_starts_is_still_stopped_and_closed_with_the_pool() -> None:
    release = asyncio.Event()
    release.set()
    pool: SessionPool[FakeSession] = SessionPool(
        budget=IdleBudget(1), idle_timeout=300, max_spares=1, max_spares_total=1, spare_delay=0
    )
    connected = asyncio.Event()
    spare = fake("spare", release)

    async def spawn(spawned: Callable[[FakeSession], None]) -> FakeSession:
        spawned(spare)  # its process exists; it connects until let
        await connected.wait()
        return spare

    assert pool.start_spare("sig", spawn)
    assert await wait_for(lambda: pool.spares() == 1 and spare.terminated_from is None and not spare.closed)
    await asyncio.sleep(0.05)  # spawning
    await pool.put(fake("kept", release))  # pushes the spare out while it starts: it is closed once started
    assert pool.spares() == 0

    pool.terminate_all()  # a close from synchronous code stops its process too
    assert spare.terminated_from is not None
    closing = asyncio.ensure_future(pool.close_all())
    await asyncio.sleep(0.05)
    assert not closing.done()  # waits for its start, then closes it
    connected.set()
    await closing
    assert spare.closed
