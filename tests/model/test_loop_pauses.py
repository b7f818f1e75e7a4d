"""Which event loops pause between calls (a ``run_sync`` program's), as the pool's spares ask: a loop that is not
running when the clock looks at it pauses; a running one never does, even one blocked past the look (an async
program); a closed one is not taken for one that pauses."""

from __future__ import annotations

import asyncio
import threading
import time

from claudecode_model._process.clock import call_at
from claudecode_model._sessions.loop_pauses import look_at, pauses
from tests._support.polling import wait_until


def clock_passed(when: float) -> threading.Event:
    """Set once the clock's thread has run every callback due at or before ``when`` (it runs them in order)."""
    passed = threading.Event()
    call_at(when, passed.set)
    return passed


def test_a_loop_not_running_when_the_clock_looks_pauses_between_calls() -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.sleep(0))  # a call, as run_sync makes one; then it does not run
        assert not pauses(loop)

        look_at(loop, time.monotonic())

        assert wait_until(lambda: pauses(loop), timeout=10)
    finally:
        loop.close()


async def test_a_running_loop_never_pauses_even_when_blocked_past_the_look() -> None:
    loop = asyncio.get_running_loop()
    when = time.monotonic()
    look_at(loop, when)

    # Blocked (as CPU-bound code in a coroutine would) until the clock has looked: late timers, a running loop.
    assert clock_passed(when).wait(timeout=10)

    assert not pauses(loop)


def test_a_closed_loop_is_not_taken_for_one_that_pauses() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    when = time.monotonic()

    look_at(loop, when)

    assert clock_passed(when).wait(timeout=10)
    assert not pauses(loop)
