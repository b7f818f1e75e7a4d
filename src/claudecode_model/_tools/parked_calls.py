"""Claude Code turns parked while pydantic-ai runs the tool calls Claude made.

When Claude's reply calls the agent's own tools, the model request returns those calls to pydantic-ai and the CLI
turn waits: the CLI has already invoked (or will invoke) the MCP handler of each call, and each handler waits for
its result here, keyed by the Anthropic ``tool_use`` id the CLI sends in ``_meta``. The next model request carries
pydantic-ai's results; they resolve the waiting handlers and the same CLI turn goes on.

Two pieces:

* :class:`CallResults` belongs to one CLI session: the results of its calls, whichever side comes first (the CLI
  calls a handler as soon as its ``tool_use`` block is complete, but calls tools without ``readOnlyHint`` one at a
  time, so a result may well arrive before its handler is called).
* :class:`ParkingLot` belongs to one model: the turns waiting for results, found again by the ids of their
  pending calls, each with a bounded lifetime after which it is closed.
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

from mcp.types import CallToolResult, TextContent

from claudecode_model._process.clock import ClockHandle, call_at
from claudecode_model._process.exit import kill_at_exit

__all__ = ["CallResults", "ParkingLot", "closed_result"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

CLOSED_TEXT = "The tool call was not executed: the agent run that owned it ended before it produced a result."


def closed_result(text: str = CLOSED_TEXT) -> CallToolResult:
    """The error result a waiting handler gets when its turn is closed without a result."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class CallResults:
    """Results of the tool calls one CLI session waits for, keyed by ``tool_use`` id.

    :meth:`wait` (the MCP handler) and :meth:`resolve` (the next model request) may come in either order. An id is
    forgotten once its handler has taken the result. After :meth:`close`, every waiting handler, and any handler
    called later, gets the closing result at once.
    """

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[CallToolResult]] = {}
        self._waiting: set[str] = set()
        self._closed: CallToolResult | None = None
        self._on_wait: Callable[[frozenset[str]], None] | None = None

    def tell_waits(self, on_wait: Callable[[frozenset[str]], None]) -> None:
        """Tell ``on_wait`` the ids waiting now whenever a handler starts waiting (the session passes it to the
        turn)."""
        self._on_wait = on_wait

    def _future(self, tool_use_id: str) -> asyncio.Future[CallToolResult]:
        future = self._futures.get(tool_use_id)
        if future is None:
            future = self._futures[tool_use_id] = asyncio.get_running_loop().create_future()
        return future

    @property
    def waiting(self) -> frozenset[str]:
        """The ids whose handlers are waiting now."""
        return frozenset(self._waiting)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed is not None

    def has_result(self, tool_use_id: str) -> bool:
        """Whether a result for ``tool_use_id`` is ready and not taken yet."""
        future = self._futures.get(tool_use_id)
        return future is not None and future.done()

    async def wait(self, tool_use_id: str) -> CallToolResult:
        """Wait for the result of ``tool_use_id`` (the handler's side); cancellation leaves the id pending."""
        if self._closed is not None:
            return self._closed
        future = self._future(tool_use_id)
        self._waiting.add(tool_use_id)
        if self._on_wait is not None and not future.done():
            self._on_wait(frozenset(self._waiting))
        try:
            result = await asyncio.shield(future)
        finally:
            self._waiting.discard(tool_use_id)
        self._futures.pop(tool_use_id, None)
        return result

    def resolve(self, tool_use_id: str, result: CallToolResult) -> bool:
        """Deliver the result of ``tool_use_id``; ``False`` if it already had one or the results are closed."""
        if self._closed is not None:
            return False
        future = self._future(tool_use_id)
        if future.done():
            return False
        future.set_result(result)
        return True

    def close(self, result: CallToolResult | None = None) -> None:
        """Answer every waiting handler, and every later one, with ``result`` (a "not executed" error)."""
        if self._closed is not None:
            return
        self._closed = result or closed_result()
        for future in self._futures.values():
            if not future.done():
                future.set_result(self._closed)
        self._futures.clear()


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
