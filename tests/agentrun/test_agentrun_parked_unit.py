"""Parked turns and the results their waiting tool handlers get (no CLI)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from claudecode_model._tools.core import McpResponse, text_result
from claudecode_model._tools.parked_calls import CallResults, closed_result
from claudecode_model._turns.parking_lot import ParkingLot
from tests._support.polling import wait_until


def _result(text: str, *, is_error: bool = False) -> McpResponse:
    return text_result(text, is_error=is_error)


def _text(result: McpResponse) -> str:
    [block] = result["content"]
    assert block["type"] == "text"
    return block["text"]


def _is_error(result: McpResponse) -> bool:
    return result.get("isError", False)


async def test_a_waiting_handler_gets_the_result_resolved_later():
    results = CallResults()
    waiter = asyncio.create_task(results.wait("toolu_1"))
    await asyncio.sleep(0)
    assert results.waiting == {"toolu_1"}
    assert results.resolve("toolu_1", _result("42"))
    assert _text(await waiter) == "42"
    assert results.waiting == frozenset()


async def test_a_result_may_arrive_before_its_handler_is_called():
    results = CallResults()
    assert results.resolve("toolu_2", _result("early"))
    assert results.has_result("toolu_2")
    assert _text(await results.wait("toolu_2")) == "early"
    assert not results.has_result("toolu_2")  # taken: forgotten


async def test_a_second_result_for_the_same_call_is_refused():
    results = CallResults()
    assert results.resolve("toolu_3", _result("first"))
    assert not results.resolve("toolu_3", _result("second"))
    assert _text(await results.wait("toolu_3")) == "first"


async def waiting(results: CallResults, call_id: str) -> asyncio.Task[McpResponse]:
    """A task waiting for the result of ``call_id``, started (it waits when this returns)."""
    waiter = asyncio.create_task(results.wait(call_id))
    await asyncio.sleep(0)
    return waiter


async def test_a_cancelled_handler_leaves_the_call_pending():
    results = CallResults()
    waiter = await waiting(results, "toolu_4")
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert results.waiting == frozenset()
    assert results.resolve("toolu_4", _result("later"))
    assert _text(await results.wait("toolu_4")) == "later"


async def test_close_answers_waiting_and_later_handlers_with_a_not_executed_error():
    results = CallResults()
    waiter = await waiting(results, "toolu_5")
    results.close()
    closed = await waiter
    assert _is_error(closed)
    assert "not executed" in _text(closed)
    later = await results.wait("toolu_6")
    assert _is_error(later)
    assert "not executed" in _text(later)
    assert not results.resolve("toolu_6", _result("too late"))
    assert results.closed


class Turn:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.killed = False

    async def close(self) -> None:
        await asyncio.sleep(0)
        self.closed = True

    def kill(self) -> None:
        self.killed = True


def _lot() -> ParkingLot[Turn]:
    return ParkingLot(close=Turn.close, kill=Turn.kill)


async def test_a_parked_turn_is_claimed_by_any_of_its_pending_call_ids():
    lot = _lot()
    turn = Turn("a")
    lot.park(turn, ["toolu_a", "toolu_b"], timeout=60)
    assert len(lot) == 1
    assert lot.pending_ids(turn) == {"toolu_a", "toolu_b"}
    assert lot.find(["toolu_x", "toolu_b"]) is turn
    assert lot.claim(["toolu_b"]) is turn
    assert lot.claim(["toolu_a"]) is None
    assert len(lot) == 0
    await asyncio.sleep(0)
    assert not turn.closed


async def test_a_turn_nobody_claims_is_closed_after_its_timeout():
    lot = _lot()
    turn = Turn("a")
    lot.park(turn, ["toolu_a"], timeout=0.05)
    await asyncio.sleep(0.2)
    assert turn.closed
    assert len(lot) == 0
    assert lot.claim(["toolu_a"]) is None


async def test_claiming_stops_the_timer():
    lot = _lot()
    turn = Turn("a")
    lot.park(turn, ["toolu_a"], timeout=0.05)
    assert lot.claim(["toolu_a"]) is turn
    await asyncio.sleep(0.15)
    assert not turn.closed


async def test_extend_restarts_the_lifetime_and_changes_the_owner():
    lot = _lot()
    turn = Turn("a")
    run = object()
    lot.park(turn, ["toolu_a"], timeout=0.05, owner=run)
    assert lot.owned_by(run) == [turn]
    lot.extend(turn, 60, owner=None)
    assert lot.owned_by(run) == []
    await asyncio.sleep(0.15)
    assert not turn.closed
    await lot.close(turn)
    assert turn.closed
    assert len(lot) == 0


async def test_one_call_cannot_wait_in_two_turns():
    lot = _lot()
    lot.park(Turn("a"), ["toolu_a"], timeout=None)
    with pytest.raises(ValueError, match="already pending"):
        lot.park(Turn("b"), ["toolu_a"], timeout=None)
    with pytest.raises(ValueError, match="at least one"):
        lot.park(Turn("c"), [], timeout=None)
    await lot.close_all()


async def test_close_all_closes_every_turn_and_waits_for_expiring_ones():
    lot = _lot()
    first, second, third = Turn("1"), Turn("2"), Turn("3")
    lot.park(first, ["toolu_1"], timeout=None)
    lot.park(second, ["toolu_2", "toolu_3"], timeout=None)
    lot.park(third, ["toolu_4"], timeout=0)
    await asyncio.sleep(0)  # the expiry starts a close in the background
    await lot.close_all()
    assert first.closed
    assert second.closed
    assert third.closed
    assert len(lot) == 0


def test_a_turn_parked_on_a_loop_that_does_not_run_is_stopped_on_time():
    """A run_sync program between calls: the clock's thread stops the turn's process (it is never handed out
    again), and the loop closes it properly when it runs next."""
    stopped_from: list[str] = []
    lot: ParkingLot[Turn] = ParkingLot(
        close=Turn.close, kill=Turn.kill, stop_now=lambda turn: stopped_from.append(threading.current_thread().name)
    )
    turn = Turn("a")
    loop = asyncio.new_event_loop()
    try:

        async def park() -> None:
            lot.park(turn, ["toolu_a"], timeout=0.1)

        loop.run_until_complete(park())
        assert wait_until(lambda: stopped_from, timeout=5)  # while no loop runs
        assert stopped_from == ["claudecode-model-clock"]

        async def next_call() -> Turn | None:
            claimed = lot.claim(["toolu_a"])
            await asyncio.sleep(0.05)
            return claimed

        assert loop.run_until_complete(next_call()) is None
        assert turn.closed
        assert len(lot) == 0
    finally:
        loop.close()


@pytest.mark.parametrize(
    ("timeout", "end"),
    [(60, "prune_dead_loops"), (None, "kill_all")],
    ids=["turns_of_a_finished_event_loop_are_killed", "kill_all_is_the_synchronous_last_resort"],
)
def test_a_turn_parked_on_a_finished_event_loop_is_killed(timeout: float | None, end: str):
    lot = _lot()
    turn = Turn("a")

    async def park() -> None:
        lot.park(turn, ["toolu_a"], timeout=timeout)

    asyncio.run(park())
    getattr(lot, end)()
    assert turn.killed
    assert len(lot) == 0


def test_closed_result_is_an_error_naming_what_happened():
    result = closed_result()
    assert _is_error(result)
    assert "not executed" in _text(result)


async def test_close_oldest_closes_the_turn_parked_longest():
    lot = _lot()
    first, second = Turn("first"), Turn("second")
    lot.park(first, ["toolu_1"], timeout=60)
    await asyncio.sleep(0.01)
    lot.park(second, ["toolu_2"], timeout=60)

    assert await lot.close_oldest()

    assert first.closed
    assert not second.closed
    assert lot.find(["toolu_2"]) is second
    assert await lot.close_oldest()
    assert not await lot.close_oldest()
