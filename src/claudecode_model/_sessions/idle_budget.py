"""How many idle CLI processes a program holds: kept sessions and spares share one budget.

Every model with the default ``keep_sessions`` counts its idle CLIs (sessions kept for a follow-up, spares started
for the next new conversation) against :data:`PROGRAM_IDLE_BUDGET`; a model with an explicit ``keep_sessions=k`` gets
a budget of its own, of ``k``. When an idle CLI joins a full budget, the least useful one leaves: a spare before any
kept session (a kept session serves its conversation's follow-up, and a new conversation of its kind too, rewound to
empty), the oldest spare first, then the kept session last used the longest ago. Busy CLIs (a turn running or waiting
for tool results) are not counted.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_IDLE_CLIS", "PROGRAM_IDLE_BUDGET", "SETTLE_SECONDS", "Eviction", "IdleBudget"]

logger = logging.getLogger(__name__)

DEFAULT_IDLE_CLIS = 2
"""The idle CLIs a program keeps by default, over all its models (each is about 190-200 MB of memory)."""

Eviction = Callable[[], "asyncio.Task[None] | None"]
"""Stops one idle CLI that fell out of its budget (called by the budget, outside its lock); the task closing it, if
that runs on the caller's event loop."""


@dataclass(frozen=True)
class _Idle:
    spare: bool
    """A spare leaves before any kept session."""
    since: float
    """When it was last useful: a kept session's last turn, a spare's request."""
    evict: Eviction

    @property
    def worth(self) -> tuple[bool, float]:
        """Orders idle CLIs from the least useful: spares, then kept sessions, each by when last useful."""
        return not self.spare, self.since


class IdleBudget:
    """A bound on idle CLIs, shared by the pools that count against it; the least useful one goes first.

    Thread-safe: pools of models used from several threads (or event loops) may share one budget. The budget only
    orders and counts; stopping a process is the owning pool's :data:`Eviction`, called without the budget's lock held.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._idle: dict[object, _Idle] = {}
        self._leaving: set[asyncio.Task[None]] = set()
        """The closes of the idle CLIs it stopped, until done."""
        self._lock = threading.Lock()

    def admit(self, key: object, evict: Eviction, *, since: float | None = None, spare: bool = False) -> bool:
        """Count ``key`` (a kept session, or a ``spare``) as idle, last useful at ``since`` (default: now); stop the
        least useful beyond the limit (a new CLI starts once they are gone: :meth:`settled`).

        ``False`` if ``key`` itself is the least useful of a full budget (it is not counted: the caller does not keep
        it, nor anything under a limit of 0).
        """
        if self.limit <= 0:
            return False
        useful = _Idle(spare, time.monotonic() if since is None else since, evict)
        with self._lock:
            self._idle.pop(key, None)
            if len(self._idle) >= self.limit and all(idle.worth > useful.worth for idle in self._idle.values()):
                return False
            self._idle[key] = useful
            by_age = sorted(self._idle, key=lambda each: self._idle[each].worth)
            victims = [self._idle.pop(oldest).evict for oldest in by_age[: max(len(by_age) - self.limit, 0)]]
        if victims:
            logger.debug("%d idle CLI(s) over the budget of %d: stopping the least useful", len(victims), self.limit)
        for victim in victims:
            if (closing := victim()) is not None and not closing.done():
                with self._lock:
                    self._leaving.add(closing)
                closing.add_done_callback(self._left)
        return True

    def _left(self, closing: asyncio.Task[None]) -> None:
        with self._lock:
            self._leaving.discard(closing)

    async def settled(self) -> None:
        """Wait (a few seconds at most) until the idle CLIs it stopped on the running event loop are gone: a new
        CLI starts after them, so that the program never holds more than the budget and its busy CLIs."""
        loop = asyncio.get_running_loop()
        with self._lock:
            leaving = [closing for closing in self._leaving if closing.get_loop() is loop]
        if leaving:
            await asyncio.wait(leaving, timeout=SETTLE_SECONDS)

    def release(self, key: object) -> None:
        """``key`` is no longer idle (taken by a turn, claimed, or stopped)."""
        with self._lock:
            self._idle.pop(key, None)

    def __len__(self) -> int:
        return len(self._idle)

    def __contains__(self, key: object) -> bool:
        return key in self._idle


SETTLE_SECONDS = 5.0
"""The longest a new CLI waits for the idle ones its budget stopped (a close takes 0.1-0.2 s)."""

PROGRAM_IDLE_BUDGET = IdleBudget(DEFAULT_IDLE_CLIS)
"""The budget every model with the default ``keep_sessions`` shares."""
