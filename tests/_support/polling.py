"""Bounded polling for a condition, in threads (``wait_until``, ``until``) and on an event loop (``wait_for``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], timeout: float = 5.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` passes; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return bool(condition())
        time.sleep(0.02)


def until(condition: Callable[[], object], what: str, seconds: float = 15) -> None:
    """Poll ``condition()`` until it is true; fail with ``what`` if ``seconds`` pass first."""
    assert wait_until(condition, timeout=seconds), what


async def wait_for(condition: Callable[[], object], within: float = 20.0, interval: float = 0.02) -> bool:
    """Poll ``condition()`` without blocking the event loop until it is true or ``within`` seconds pass."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return bool(condition())
        await asyncio.sleep(interval)
    return True
