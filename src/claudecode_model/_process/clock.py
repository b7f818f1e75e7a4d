"""The clock of the session pools: a helper thread that calls back at a given time, whether or not an event loop runs.

An idle CLI session belongs to the event loop that started it, and a timer of that loop fires only while the loop
runs. A program that uses ``run_sync`` runs its loop only during its calls: between them nothing would stop an idle
CLI on time. The pools therefore keep their deadlines here, on one daemon thread per Python process; the callback
decides what it can do from that thread (schedule the trimming on a running loop, or stop processes itself).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ClockHandle", "call_at", "running_loop"]

logger = logging.getLogger(__name__)


@dataclass(order=True)
class ClockHandle:
    """A scheduled callback; :meth:`cancel` it if it is no longer wanted."""

    when: float
    order: int
    callback: Callable[[], None] | None = field(compare=False)

    def cancel(self) -> None:
        """Do not call back (a no-op once it ran)."""
        self.callback = None

    @property
    def pending(self) -> bool:
        """Whether it will still call back."""
        return self.callback is not None


class _Clock:
    def __init__(self) -> None:
        self._due: list[ClockHandle] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def call_at(self, when: float, callback: Callable[[], None]) -> ClockHandle:
        handle = ClockHandle(when, next(self._order), callback)
        with self._changed:
            heapq.heappush(self._due, handle)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="claudecode-model-clock", daemon=True)
                self._thread.start()
            self._changed.notify()
        return handle

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._due and self._due[0].callback is None:
                    heapq.heappop(self._due)
                if not self._due:
                    self._changed.wait()
                    continue
                wait = self._due[0].when - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                handle = heapq.heappop(self._due)
            callback, handle.callback = handle.callback, None
            if callback is None:
                continue
            try:
                callback()
            except Exception:
                logger.exception("a timer of the session pool failed")

    def after_fork(self) -> None:
        """The thread does not survive a fork: the child starts its own at its first deadline."""
        self._changed = threading.Condition()
        self._due = []
        self._thread = None


_CLOCK = _Clock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_CLOCK.after_fork)


def call_at(when: float, callback: Callable[[], None]) -> ClockHandle:
    """Call ``callback`` on the clock's thread at ``when`` (``time.monotonic()``); it must be quick and
    thread-safe."""
    return _CLOCK.call_at(when, callback)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
