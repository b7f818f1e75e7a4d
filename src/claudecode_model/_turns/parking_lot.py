"""The turns of one model parked while pydantic-ai runs the tool calls Claude made.

A turn whose reply called the agent's own tools waits for their results (its handlers wait on the session's
:class:`~claudecode_model._tools.parked_calls.CallResults`). :class:`ParkingLot` keeps such turns, found again by the
ids of their pending calls, each with a bounded lifetime after which it is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from claudecode_model._process.clock import ClockHandle, call_at
from claudecode_model._process.exit import kill_at_exit

__all__ = ["ParkingLot"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class _Parked(Generic[T]):
    turn: T
    call_ids: frozenset[str]
    owner: object | None
    timer: ClockHandle | None = None
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop)
    stopped: bool = False
    """Its process was stopped by the clock's thread (its loop was not running): never handed out again."""
    parked_at: float = field(default_factory=time.monotonic)


class ParkingLot(Generic[T]):
    """Turns waiting for tool results, found by the ids of their pending calls, each closed after a bounded time.

    ``close`` stops a turn (awaited by :meth:`close_all`, run in a tracked task on expiry); ``kill`` is the
    synchronous last resort for turns whose event loop is gone (interpreter exit). The lifetimes are kept by the
    pools' clock (:mod:`claudecode_model._process.clock`), so they end on time in a ``run_sync`` program too: a turn
    whose
    loop does not run when its time is up is stopped from the clock's thread with ``stop_now`` (thread-safe), and
    closed properly once its loop runs again.
    """

    def __init__(
        self,
        *,
        close: Callable[[T], Awaitable[None]],
        kill: Callable[[T], None],
        stop_now: Callable[[T], None] | None = None,
    ) -> None:
        self._close = close
        self._kill = kill
        self._stop_now = stop_now
        self._lock = threading.Lock()
        """Guards who gets a parked turn: a request claiming it, or the clock's thread stopping it."""
        self._parked: dict[str, _Parked[T]] = {}
        """Every pending call id -> its parked turn (several ids share one entry)."""
        self._closing: set[asyncio.Task[None]] = set()
        kill_at_exit(self, ParkingLot.kill_all)  # a turn still parked at exit must not outlive it

    def __len__(self) -> int:
        return len({id(entry) for entry in self._parked.values()})

    def _entries(self) -> list[_Parked[T]]:
        unique: dict[int, _Parked[T]] = {}
        for entry in self._parked.values():
            unique.setdefault(id(entry), entry)
        return list(unique.values())

    def park(self, turn: T, call_ids: Collection[str], *, timeout: float | None, owner: object | None = None) -> None:
        """Keep ``turn`` until a request claims one of ``call_ids``, or until ``timeout`` seconds pass."""
        if not call_ids:
            raise ValueError("a parked turn must wait for at least one tool call")
        entry = _Parked(turn, frozenset(call_ids), owner)
        for call_id in entry.call_ids:
            previous = self._parked.get(call_id)
            if previous is not None and previous.turn is not turn:
                raise ValueError(f"tool call {call_id!r} is already pending in another turn")
        self._remove(turn)
        for call_id in entry.call_ids:
            self._parked[call_id] = entry
        self._arm(entry, timeout)

    def _arm(self, entry: _Parked[T], timeout: float | None) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        if timeout is not None:
            entry.timer = call_at(time.monotonic() + max(timeout, 0.0), lambda: self._time_up(entry))

    def _time_up(self, entry: _Parked[T]) -> None:
        """On the clock's thread: the turn's loop expires it; a loop that does not run gets its process stopped
        from here first."""
        loop = entry.loop
        if loop.is_closed():
            return  # prune_dead_loops() kills it
        with self._lock:
            if not loop.is_running() and self._stop_now is not None and not entry.stopped and self._holds(entry):
                entry.stopped = True
                self._stop_now(entry.turn)
        with contextlib.suppress(RuntimeError):  # closed meanwhile
            loop.call_soon_threadsafe(self._expire, entry)

    def _holds(self, entry: _Parked[T]) -> bool:
        return any(self._parked.get(call_id) is entry for call_id in entry.call_ids)

    def _expire(self, entry: _Parked[T]) -> None:
        if self._remove(entry.turn) is None:
            return
        logger.info("closing a Claude Code turn that waited too long for %d tool result(s)", len(entry.call_ids))
        self._close_later(entry.turn)

    def _close_later(self, turn: T) -> None:
        task = asyncio.get_running_loop().create_task(self._close_quietly(turn), name="claude-code-parked-close")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_quietly(self, turn: T) -> None:
        try:
            await self._close(turn)
        except asyncio.CancelledError:
            self._kill(turn)
            raise
        except Exception as error:
            logger.debug("closing a parked turn failed (%s); killing it", error)
            self._kill(turn)

    def _remove(self, turn: T) -> _Parked[T] | None:
        found: _Parked[T] | None = None
        for call_id, entry in list(self._parked.items()):
            if entry.turn is turn:
                del self._parked[call_id]
                found = entry
        if found is not None and found.timer is not None:
            found.timer.cancel()
        return found

    def find(self, call_ids: Iterable[str]) -> T | None:
        """The turn waiting for any of ``call_ids`` on the running loop, left parked."""
        loop = asyncio.get_running_loop()
        for call_id in call_ids:
            entry = self._parked.get(call_id)
            if entry is not None and entry.loop is loop and not entry.stopped:
                return entry.turn
        return None

    def pending_ids(self, turn: T) -> frozenset[str]:
        """The call ids ``turn`` was parked with (empty if it is not parked)."""
        for entry in self._parked.values():
            if entry.turn is turn:
                return entry.call_ids
        return frozenset()

    def claim(self, call_ids: Iterable[str]) -> T | None:
        """Take the turn waiting for any of ``call_ids`` (its timer stops), or ``None``."""
        with self._lock:
            turn = self.find(call_ids)
            if turn is not None:
                self._remove(turn)
        return turn

    def owned_by(self, owner: object) -> list[T]:
        """The turns parked by ``owner`` (an agent run)."""
        return [entry.turn for entry in self._entries() if entry.owner is owner]

    def extend(self, turn: T, timeout: float | None, *, owner: object | None = None) -> None:
        """Restart the lifetime of a parked turn (and hand it to another owner, or none)."""
        for entry in self._entries():
            if entry.turn is turn:
                entry.owner = owner
                self._arm(entry, timeout)
                return

    async def close_oldest(self) -> bool:
        """Close the turn of the running loop that has been parked longest (a request needs its process slot);
        whether there was one. Its run continues later from the history, as after an expiry."""
        loop = asyncio.get_running_loop()
        entries = [entry for entry in self._entries() if entry.loop is loop]
        if not entries:
            return False
        oldest = min(entries, key=lambda entry: entry.parked_at)
        logger.info("closing a Claude Code turn waiting for tool results: a request needs its process slot")
        await self.close(oldest.turn)
        return True

    def close_soon(self, turn: T) -> bool:
        """Unpark ``turn`` and close it in the background; whether it was parked."""
        if self._remove(turn) is None:
            return False
        self._close_later(turn)
        return True

    async def close(self, turn: T) -> None:
        """Unpark and close ``turn`` now."""
        if self._remove(turn) is not None:
            await self._close_quietly(turn)

    def loops(self) -> set[asyncio.AbstractEventLoop]:
        """The open event loops of the parked turns (each is closed by :meth:`close_all` run on it)."""
        found = {entry.loop for entry in self._entries()} | {task.get_loop() for task in list(self._closing)}
        return {loop for loop in found if not loop.is_closed()}

    async def close_all(self) -> None:
        """Close every turn parked on the running loop (and wait for closes in progress); kill those of closed
        loops. Turns of other open loops are left to a ``close_all()`` on their own loop."""
        loop = asyncio.get_running_loop()
        entries = [entry for entry in self._entries() if entry.loop is loop or entry.loop.is_closed()]
        for entry in entries:
            self._remove(entry.turn)
        foreign = [entry for entry in entries if entry.loop is not loop]
        for entry in foreign:
            self._kill(entry.turn)
        await asyncio.gather(*(self._close_quietly(entry.turn) for entry in entries if entry.loop is loop))
        closing = [task for task in self._closing if task.get_loop() is loop]
        if closing:
            await asyncio.wait(closing)

    def prune_dead_loops(self) -> None:
        """Kill turns whose event loop is closed (an ``asyncio.run`` that ended with a turn parked)."""
        for entry in self._entries():
            if entry.loop.is_closed():
                self._remove(entry.turn)
                self._kill(entry.turn)

    def kill_all(self) -> None:
        """Synchronous cleanup (interpreter exit)."""
        entries = self._entries()
        self._parked.clear()
        for entry in entries:
            self._kill(entry.turn)
