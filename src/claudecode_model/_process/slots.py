"""A bound on the live Claude Code CLI processes of one model.

Each CLI process holds about 200-250 MB and burns over a second of CPU starting up. :class:`ProcessSlots` counts the
live processes of a model (busy, kept idle for follow-ups, and spares) and makes a request that needs a new one
wait for a free slot. A model may be used from several event loops (``run_sync`` runs each call in its own), so the
waiters are woken through their own loop. :func:`starting_slots` bounds, the same way, how many CLI processes of
the whole Python process start at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections import deque
from collections.abc import Callable

from claudecode_model._process import platform

__all__ = [
    "CLI_PROCESS_MB",
    "PROCESSES_PER_CPU",
    "STARTS_PER_CPU",
    "ProcessSlots",
    "default_max_processes",
    "starting_slots",
]

logger = logging.getLogger(__name__)

CLI_PROCESS_MB = 250
"""What one CLI process is assumed to hold (measured 200-250 MB of RSS, more with large conversations)."""
PROCESSES_PER_CPU = 8
"""Start-up is CPU bound (about 1.2 s per process): beyond this many per CPU, more processes only queue."""
STARTS_PER_CPU = 2
"""CLI start-ups at once per CPU, in the whole Python process. Beyond it, starting more at once only slows each of
them down: 16 at once on 2 CPUs took longer for every conversation than 4 at a time (see docs/benchmarks.md)."""


def default_max_processes() -> int:
    """A cap from the machine: what the available memory holds at ``CLI_PROCESS_MB`` each, at most
    ``PROCESSES_PER_CPU`` per CPU, and at least 2."""
    by_cpu = PROCESSES_PER_CPU * (os.cpu_count() or 1)
    available = platform.available_memory_mb()
    by_memory = available // CLI_PROCESS_MB if available is not None else by_cpu
    return max(2, min(by_cpu, by_memory))


class ProcessSlots:
    """Slots for the live CLI processes of one model: taken before a process starts, given back once it is gone."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_processes must be at least 1, got {limit}")
        self.limit = limit
        self._used = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def used(self) -> int:
        """How many slots are taken (live or starting processes)."""
        return self._used

    @property
    def waiting(self) -> int:
        """How many requests wait for a slot."""
        return sum(1 for waiter in self._waiters if not waiter.done())

    def try_acquire(self) -> bool:
        """Take a slot if one is free and no request waits for one (spares never delay a request)."""
        if self._used >= self.limit or self.waiting:
            return False
        self._used += 1
        return True

    async def acquire(self, evict: Callable[[], bool]) -> None:
        """Take a slot, waiting for one if all are taken.

        ``evict`` is asked to give one back (stop an idle process) whenever none is free; it returns whether it
        did. The wait has no timeout of its own: the caller bounds it.
        """
        loop = asyncio.get_running_loop()
        while True:
            if self._used < self.limit and not self.waiting:
                self._used += 1
                return
            evict()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_next()  # woken and cancelled at once: pass the turn on
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if self._used < self.limit:
                self._used += 1
                return

    def release(self) -> None:
        """Give a slot back (the process is gone) and wake the longest waiting request."""
        if self._used <= 0:
            logger.debug("a process slot was released more often than taken")
            return
        self._used -= 1
        self._wake_next()

    def _wake_next(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            waiter_loop = waiter.get_loop()
            if waiter_loop.is_closed():
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if waiter_loop is running:
                waiter.set_result(None)
            else:
                waiter_loop.call_soon_threadsafe(_wake, waiter)
            return


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@functools.cache
def starting_slots() -> ProcessSlots:
    """The process-wide bound on CLI processes starting at once (``STARTS_PER_CPU`` per CPU): a start takes a slot
    before it spawns its process and gives it back once the CLI is connected (or the start failed)."""
    return ProcessSlots(STARTS_PER_CPU * (os.cpu_count() or 1))
