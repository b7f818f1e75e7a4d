"""The pool of idle CLI sessions kept for follow-up turns, and of spares started ahead of new conversations."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import anyio

from claudecode_model._process.clock import ClockHandle, call_at, running_loop
from claudecode_model._process.exit import kill_at_exit
from claudecode_model._sessions import loop_pauses
from claudecode_model._sessions.idle_budget import IdleBudget

__all__ = ["HEAD_START_SECONDS", "SPARE_START_DELAY", "PooledSession", "SessionPool", "SpareFactory"]

logger = logging.getLogger(__name__)


class PooledSession(Protocol):
    """What :class:`SessionPool` needs of a session it keeps."""

    session_id: str | None
    signature: str
    seen_digest: str | None
    opening_uuid: str | None
    last_used: float
    busy: bool

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def closed(self) -> bool: ...

    @property
    def known_closed(self) -> bool: ...

    async def close(self) -> None: ...

    def kill(self) -> None: ...

    def terminate(self) -> None: ...


S = TypeVar("S", bound=PooledSession)

SpareFactory = Callable[[Callable[[S], None]], Awaitable[S | None]]
"""Starts a spare session (``None``: no process slot was free, nothing started), telling the callback it is given
the session once its CLI's process exists."""


SPARE_START_DELAY = 0.3
"""Seconds a spare waits after the turn that asked for it before its CLI starts (unless claimed or awaited first).

A CLI start costs about a second of CPU; started at once, it competes with what the caller does right after the
turn (pydantic-ai ending the run, the next request of the same conversation). Measured in the benchmarks.

On an event loop that pauses between calls (a ``run_sync`` program's, :mod:`claudecode_model._sessions.loop_pauses`)
a spare starts at once instead, and the turn that asked for it waits until its CLI's process exists
(:meth:`SessionPool.head_start`): the CLI boots while the loop is paused."""

HEAD_START_SECONDS = 0.25
"""The longest a turn on a loop that pauses between calls waits for its spare's CLI process to be spawned.

The spawn comes once the idle CLI the spare pushed out of the budget has exited (26-61 ms measured); a spawn that
takes longer (a loaded machine, a hanging start) is not waited for: the spare then starts with the next call, as
it would without the head start. Against a new CLI's 0.45-0.65 s to its first answer here, at most a quarter
second keeps the wait well below what it gains."""


@dataclass(eq=False)
class _SpareStart:
    """When a spare's CLI may start: after its delay, or at once when a request needs it (``go``). Then it joins
    the idle budget (``admit``: a spare waiting for its delay holds no process, and one claimed meanwhile is not
    idle), and starts once the idle CLIs it pushed out are gone, so that the program never holds more."""

    delay: float
    admit: Callable[[], bool]
    settled: Callable[[], Awaitable[None]]
    go: asyncio.Event = field(default_factory=asyncio.Event)
    spawning: bool = False

    async def wait(self) -> bool:
        """Whether the spare may start (``False``: the budget holds more useful CLIs)."""
        if self.delay > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.delay):
                    await self.go.wait()
        if not self.admit():
            return False
        await self.settled()
        self.spawning = True
        return True


@dataclass(eq=False)
class _Spare(Generic[S]):
    """A session started ahead of the conversation that will claim it."""

    signature: str
    factory: SpareFactory[S]
    task: asyncio.Task[S | None]
    start: _SpareStart
    starting: S | None = None
    """The session once its CLI's process exists (it may still be connecting)."""
    spawned: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once its CLI's process exists, or its start is over (without a process, maybe)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.task.get_loop()

    def ready(self) -> S | None:
        """The started session, if the start is over and succeeded."""
        if not self.task.done() or self.task.cancelled() or self.task.exception() is not None:
            return None
        return self.task.result()

    def running(self) -> S | None:
        """The session whose CLI process this spare holds: the started one, or one still connecting."""
        if self.task.done():
            return self.ready()
        return self.starting


class SessionPool(Generic[S]):
    """Idle CLI sessions kept for continuation, and spare sessions started ahead of new conversations.

    The one place sessions are kept between turns: a turn takes the session it continues from here, and gives it
    back when it ends cleanly; a new conversation claims a spare with its session signature from here, else takes a
    kept session of that signature to rewind (:meth:`take_rewindable`).

    Bounds: kept sessions and spares count against ``budget`` (:mod:`claudecode_model._sessions.idle_budget`,
    shared with other models' pools or the model's own), which stops the least useful idle CLI when a new
    one would exceed it; each is stopped after ``idle_timeout`` seconds unused; at most ``max_spares`` spares per
    signature and ``max_spares_total`` in all; the oldest idle session is the first stopped when a new process
    needs one of the model's process slots.

    Sessions that fall out of the bounds are closed in the background: stopping a CLI process takes 0.1-0.2 s,
    which no turn should wait for. :meth:`close_all` waits for those closes too. The bounds hold by time, whether
    or not another request comes and whether or not the sessions' event loop runs: the pool's next deadline is
    kept by :mod:`claudecode_model._process.clock`, whose thread has a running loop trim the pool, and stops the
    processes of a loop that does not run (a ``run_sync`` program between calls) itself; that loop tidies up when it
    runs again.
    """

    def __init__(
        self,
        *,
        budget: IdleBudget,
        idle_timeout: float,
        max_spares: int = 0,
        max_spares_total: int = 0,
        spare_delay: float | None = None,
    ) -> None:
        self.budget = budget
        self.idle_timeout = idle_timeout
        self.max_spares = max_spares
        self.max_spares_total = max_spares_total
        self.spare_delay = SPARE_START_DELAY if spare_delay is None else spare_delay
        self._sessions: dict[str, S] = {}
        self._spares: list[_Spare[S]] = []
        self._unwanted: set[_Spare[S]] = set()
        """Spares stopped while they started: closed once started (:meth:`_retire_when_started`)."""
        self._closing: dict[S, asyncio.Task[None]] = {}
        self._lock = threading.Lock()
        """Guards who gets an idle session: a turn taking it, or the clock's thread stopping it."""
        self._stopped: set[S] = set()
        """Idle sessions whose process the clock's thread stopped, for their loop to tidy up."""
        self._clock: ClockHandle | None = None
        kill_at_exit(self, SessionPool.kill_all)

    def take(self, session_id: str, *, signature: str, digest: str) -> S | None:
        """Remove and return a live session that has seen exactly ``digest`` with the same options."""
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.closed or session.loop is not running_loop() or session.busy:
            return None
        if session.signature != signature or session.seen_digest != digest:
            return None
        with self._lock:
            if session in self._stopped or self._sessions.get(session_id) is not session:
                return None
            del self._sessions[session_id]
        self.budget.release(session)
        return session

    def take_rewindable(self, signature: str) -> S | None:
        """Remove and return the least recently used idle session with ``signature`` whose process opened its
        conversation (it can be rewound to serve a new one, :meth:`CLISession.rewind`)."""
        loop = running_loop()
        candidates = sorted(
            (s for s in self._sessions.values() if s.loop is loop and self._rewindable(s, signature)),
            key=lambda s: s.last_used,
        )
        for session in candidates:
            if session.closed:
                continue
            with self._lock:
                if session in self._stopped or self._sessions.get(session.session_id or "") is not session:
                    continue
                del self._sessions[session.session_id or ""]
            self.budget.release(session)
            return session
        return None

    def _rewindable(self, session: S, signature: str) -> bool:
        return (
            session.signature == signature
            and session.opening_uuid is not None
            and not session.busy
            and not session.known_closed
            and session not in self._stopped
        )

    async def put(self, session: S) -> None:
        """Keep ``session`` for a later turn, stopping what falls out of the bounds."""
        if self.budget.limit <= 0 or session.session_id is None or session.known_closed:
            await session.close()
            return
        previous = self._sessions.pop(session.session_id, None)
        if previous is not None and previous is not session:
            self._retire(previous)
        self._sessions[session.session_id] = session
        if not self.budget.admit(session, lambda: self._evict_session(session)):
            del self._sessions[session.session_id]
            await session.close()
            return
        await self.prune()

    async def prune(self) -> None:
        """Close expired sessions, sessions of closed event loops, and the oldest over the limit once their grace
        is over; replace spares that died while idle."""
        self._trim()

    # --- the bounds by time ---------------------------------------------------------------------------------------

    def _deadlines(self, loop: asyncio.AbstractEventLoop) -> list[tuple[float, S]]:
        """When each idle session of ``loop`` falls out of the bounds: ``idle_timeout`` after its last use."""
        return [
            (s.last_used + self.idle_timeout, s)
            for s in list(self._sessions.values())
            if s.loop is loop and s not in self._stopped
        ]

    def _spare_deadlines(self, loop: asyncio.AbstractEventLoop) -> list[tuple[float, _Spare[S]]]:
        """When each spare of ``loop`` whose CLI process exists falls out of the bounds: ``idle_timeout`` after its
        start. On a loop that pauses between calls, one still connecting too, and by :data:`_PAUSED_CONNECT_SECONDS`
        at the latest (elsewhere its loop runs: it connects)."""
        pauses = loop_pauses.pauses(loop)
        found = []
        for spare in list(self._spares):
            if spare.loop is not loop or (session := spare.running()) is None or session in self._stopped:
                continue
            if spare.task.done():
                found.append((session.last_used + self.idle_timeout, spare))
            elif pauses:
                found.append((session.last_used + min(self.idle_timeout, _PAUSED_CONNECT_SECONDS), spare))
        return found

    def _loops(self) -> set[asyncio.AbstractEventLoop]:
        """The open event loops the pool's sessions and spares belong to (those of a closed loop have no deadline:
        the next trim on a running loop, or the exit hook, kills them)."""
        loops = {s.loop for s in list(self._sessions.values())} | {s.loop for s in list(self._spares)}
        return {loop for loop in loops if not loop.is_closed()}

    def _trim(self) -> None:
        """On the running loop: close what is out of the bounds now, then wait for the next deadline."""
        now = time.monotonic()
        loop = running_loop()
        for key, session in list(self._sessions.items()):
            if session.loop is not loop:
                if session.loop.is_closed():
                    session.kill()
                    del self._sessions[key]
                    self.budget.release(session)
                continue
            if session in self._stopped or session.known_closed:
                del self._sessions[key]
                self._retire(session)
        if loop is not None:
            for deadline, session in self._deadlines(loop):
                if deadline <= now and session.session_id is not None:
                    self._sessions.pop(session.session_id, None)
                    logger.debug("closing a CLI session idle for %.0f s", now - session.last_used)
                    self._retire(session)
        self._prune_spares(now, loop)
        self._schedule()

    def _schedule(self, *, recheck: float | None = None) -> None:
        """Have the clock call :meth:`_tick` at the pool's next deadline (or at ``recheck``, if earlier)."""
        deadlines = [d for loop in self._loops() for d, _ in [*self._deadlines(loop), *self._spare_deadlines(loop)]]
        if recheck is not None:
            deadlines.append(recheck)
        with self._lock:
            current = self._clock
            if not deadlines or (current is not None and current.pending and current.when <= min(deadlines)):
                return
            if current is not None:
                current.cancel()
            # A deadline already past that the tick could not act on (a session still connecting on a loop that
            # does not run) is looked at again a little later, not at once: the clock never spins.
            self._clock = call_at(max(min(deadlines), time.monotonic() + _CLOCK_MIN_INTERVAL_SECONDS), self._tick)

    def _tick(self) -> None:
        """On the clock's thread, at a deadline: a running loop is asked to trim the pool; the overdue processes of
        a loop that does not run are stopped from here."""
        now = time.monotonic()
        recheck = None
        for loop in self._loops():
            if loop.is_closed():
                continue
            sessions = [s for deadline, s in self._deadlines(loop) if deadline <= now]
            spares = [spare for deadline, spare in self._spare_deadlines(loop) if deadline <= now]
            if not sessions and not spares:
                continue
            # Either way the loop tidies up when it runs: if it was about to stop, the recheck finds the
            # sessions still there and stops them from here.
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(self._trim)
            if loop.is_running():
                recheck = now + _CLOCK_RECHECK_SECONDS
            else:
                self._stop_off_loop(loop, sessions, spares)
        self._schedule(recheck=recheck)

    def _stop_off_loop(self, loop: asyncio.AbstractEventLoop, sessions: list[S], spares: list[_Spare[S]]) -> None:
        with self._lock:
            if loop.is_running():
                return
            for session in sessions:
                if session.session_id is not None and self._sessions.get(session.session_id) is session:
                    logger.debug("stopping a CLI process idle for %.0f s", time.monotonic() - session.last_used)
                    self._stopped.add(session)
                    session.terminate()
            for spare in spares:
                if spare in self._spares and (unused := spare.running()) is not None:
                    logger.debug(
                        "stopping a spare CLI process unused for %.0f s%s",
                        time.monotonic() - unused.last_used,
                        "" if spare.task.done() else " (still connecting: its event loop did not run)",
                    )
                    self._stopped.add(unused)
                    unused.terminate()

    def _prune_spares(self, now: float, loop: asyncio.AbstractEventLoop | None) -> None:
        for spare in list(self._spares):
            if spare.loop is not loop:
                if spare.loop.is_closed():
                    self._drop_spare(spare)
                    if (session := spare.ready()) is not None:
                        session.kill()
                continue
            if not spare.task.done():
                continue
            session = spare.ready()
            if session is None:  # failed to start: forgotten (the next fresh conversation starts another)
                self._drop_spare(spare)
                continue
            if session in self._stopped or now - session.last_used > self.idle_timeout:
                self._drop_spare(spare)
                logger.debug("closing a spare CLI session unused for %.0f s", now - session.last_used)
                self._retire(session)
            elif session.known_closed:  # died while idle: replaced, never used
                self._drop_spare(spare)
                self._retire(session)
                self.start_spare(spare.signature, spare.factory)

    # --- spares ---------------------------------------------------------------------------------------------

    def spares(self, signature: str | None = None) -> int:
        """How many spares (ready or starting) the pool holds on this loop, for ``signature`` or in all."""
        loop = running_loop()
        return sum(1 for s in self._spares if s.loop is loop and signature in (None, s.signature))

    def start_spare(self, signature: str, factory: SpareFactory[S]) -> bool:
        """Start a spare for ``signature`` in the background unless the bounds are reached; whether it did."""
        if self.budget.limit <= 0:
            return False
        if self.spares(signature) >= self.max_spares or len(self._spares) >= self.max_spares_total:
            return False
        loop = asyncio.get_running_loop()

        requested = time.monotonic()
        delay = 0.0 if loop_pauses.pauses(loop) else self.spare_delay
        if delay > 0:
            loop_pauses.look_at(loop, requested + delay)

        def admit() -> bool:
            if spare not in self._spares:
                return True  # claimed: busy, not idle
            return self.budget.admit(spare, lambda: self._evict_spare(spare), since=requested, spare=True)

        def spawned(session: S) -> None:
            spare.starting = session
            spare.spawned.set()
            self._schedule()  # its idle deadline holds while it connects, too

        start = _SpareStart(delay, admit, self.budget.settled)
        task = loop.create_task(_start_spare(factory, start, spawned), name="claude-code-spare-start")
        spare = _Spare(signature, factory, task, start)
        self._spares.append(spare)
        task.add_done_callback(lambda _: self._start_over(spare))
        return True

    def _start_over(self, spare: _Spare[S]) -> None:
        spare.spawned.set()
        if spare.ready() is None and spare.starting is not None:
            with self._lock:
                self._stopped.discard(spare.starting)  # a start the clock stopped failed: nothing to tidy up
        self._schedule()  # its idle deadline

    def drop_waiting_spares(self, signature: str) -> None:
        """Give up the spares for ``signature`` whose CLI process does not exist yet (waiting for their delay, or
        preparing its start): a kept CLI rewound for a new conversation showed that the kept CLIs serve the next
        ones. A spare whose process exists is left to start."""
        loop = running_loop()
        for spare in [s for s in self._spares if s.loop is loop and s.signature == signature]:
            if spare.starting is None and not spare.task.done():
                self._drop_spare(spare)
                spare.task.cancel()
                logger.debug("a spare not spawned yet is given up: a kept CLI was rewound for its kind")

    async def head_start(self) -> None:
        """On a loop that pauses between calls, wait (at most :data:`HEAD_START_SECONDS`) until the spares starting
        on it have spawned their CLI process, which then boots while the loop is paused. Elsewhere: at once."""
        loop = running_loop()
        if loop is None or not loop_pauses.pauses(loop):
            return
        waiting = [s.spawned for s in self._spares if s.loop is loop and not s.spawned.is_set()]
        if not waiting:
            return
        asked = time.monotonic()
        with anyio.move_on_after(HEAD_START_SECONDS) as scope:
            for spawned in waiting:
                await spawned.wait()
        logger.debug(
            "%s after %.0f ms (the event loop pauses between calls)",
            "a spare's CLI is not spawned yet: it starts with the next call"
            if scope.cancelled_caught
            else "a spare's CLI was spawned",
            (time.monotonic() - asked) * 1000,
        )

    async def wait_spare(self, signature: str) -> bool:
        """Wait until the spares for ``signature`` have started; whether one is ready."""
        loop = running_loop()
        waited = [s for s in self._spares if s.loop is loop and s.signature == signature]
        for spare in waited:
            spare.start.go.set()
        tasks = [s.task for s in waited]
        if tasks:
            await asyncio.wait(tasks)
        return any(
            (session := s.ready()) is not None and not session.closed
            for s in self._spares
            if s.loop is loop and s.signature == signature
        )

    async def claim_spare(self, signature: str, *, wait: bool = True) -> S | None:
        """Remove and return a live spare started with ``signature`` (waiting for one still starting, unless not
        ``wait``: such a spare is then left to start).

        ``None`` if there is none, or if it failed to start or died: a dead spare is stopped and replaced, never
        used. The removal is synchronous, so of two concurrent claims of one spare one wins, the other gets
        ``None``.
        """
        loop = running_loop()
        spare = next((s for s in self._spares if s.loop is loop and s.signature == signature), None)
        if spare is None or (not wait and spare.ready() is None):
            return None
        with self._lock:  # not while the clock's thread stops it
            self._drop_spare(spare)
            stopped = not spare.task.done() and spare.starting in self._stopped
        if stopped:  # stopped while it connected on a paused loop: its start fails by itself, not waited for
            self._retire_when_started(spare)
            return None
        spare.start.go.set()
        try:
            session = await asyncio.shield(spare.task)
        except asyncio.CancelledError:
            if spare.task.cancelled():
                return None
            # The claimer was cancelled while the spare started: stop it once it is up.
            self._retire_when_started(spare)
            raise
        except Exception:  # the factory logs and swallows start failures; this is a last resort
            return None
        if session is None:
            return None
        if session.closed or session in self._stopped:
            self._retire(session)
            self.start_spare(spare.signature, spare.factory)
            return None
        return session

    def _retire_when_started(self, spare: _Spare[S]) -> None:
        """Close a spare no longer wanted once its start is over (killed mid-start, the CLI makes the SDK log a
        fatal error); until then a close of the pool still finds it."""
        self._unwanted.add(spare)

        def started(task: asyncio.Task[S | None]) -> None:
            self._unwanted.discard(spare)
            if (session := _started(task)) is not None:
                self._retire(session)

        spare.task.add_done_callback(started)

    def evict_idle(self) -> bool:
        """Stop one process that is not in use, to free its slot: a spare, else the least recently used idle
        session. Whether there was one."""
        loop = running_loop()
        spares = [s for s in self._spares if s.loop is loop]
        for spare in sorted(spares, key=lambda s: s.task.done(), reverse=True):  # a ready spare first
            self._drop_spare(spare)
            if (session := spare.ready()) is not None:
                self._retire(session)
            elif spare.task.done():
                continue
            else:
                spare.task.cancel()
            return True
        idle = [s for s in self._sessions.values() if s.loop is loop and not s.busy]
        if not idle:
            return False
        oldest = min(idle, key=lambda s: s.last_used)
        if oldest.session_id is not None:
            self._sessions.pop(oldest.session_id, None)
        self._retire(oldest)
        return True

    # --- closing ----------------------------------------------------------------------------------------------

    def _retire(self, session: S, *, now: bool = False) -> asyncio.Task[None]:
        """Close ``session`` in a background task of its loop (tracked until done); that task.

        ``now``: its process is sent SIGTERM first, so that it ends even if the loop stops before the close is
        done (a ``run_sync`` call returning) and the budget's bound holds at once.
        """
        self.budget.release(session)
        if now:
            session.terminate()
        if (closing := self._closing.get(session)) is not None:
            return closing
        task = session.loop.create_task(_close_or_kill(session), name="claude-code-session-close")
        self._closing[session] = task
        task.add_done_callback(lambda _: self._closed(session))
        return task

    def _drop_spare(self, spare: _Spare[S]) -> None:
        self._spares.remove(spare)
        self.budget.release(spare)

    # --- the budget's evictions (called with no lock held, from any thread) -------------------------------------

    def _evict_session(self, session: S) -> asyncio.Task[None] | None:
        """Stop an idle session the budget let go: closed on its loop if that runs here (the close task), else
        stopped now and tidied up when its loop next runs."""
        if session.loop is running_loop():
            if session.session_id is None or self._sessions.get(session.session_id) is not session:
                return None  # taken meanwhile
            if session in self.budget:
                return None  # taken and given back meanwhile: the most recently used again
            del self._sessions[session.session_id]
            logger.debug("stopping an idle CLI session: a more recently used CLI needs its place")
            return self._retire(session, now=True)
        self._stop_elsewhere(session, lambda: self._evict_session(session))
        return None

    def _evict_spare(self, spare: _Spare[S]) -> asyncio.Task[None] | None:
        """Stop a spare the budget let go (one still waiting to start is cancelled; one starting is stopped once
        up)."""
        if spare.loop is not running_loop():
            if (running := spare.running()) is not None:
                self._stop_elsewhere(running, lambda: self._evict_spare(spare))
            else:
                self._on_loop(spare.loop, lambda: self._evict_spare(spare))
            return None
        if spare not in self._spares:
            return None  # claimed meanwhile
        self._drop_spare(spare)
        logger.debug("stopping a spare CLI: a more recently used CLI needs its place")
        if (ready := spare.ready()) is not None:
            return self._retire(ready, now=True)
        if spare.task.done():
            return None
        if spare.start.spawning:
            self._retire_when_started(spare)
        else:
            spare.task.cancel()  # still waiting for its delay: nothing was started
        return None

    def _stop_elsewhere(self, session: S, evict: Callable[[], object]) -> None:
        """Stop ``session``'s process from another thread: at once if its loop is not running (it tidies up when it
        runs again), else by asking its loop to evict it."""
        loop = session.loop
        if loop.is_closed():
            session.kill()
            return
        with self._lock:
            if not loop.is_running():
                self._stopped.add(session)
                session.terminate()
        self._on_loop(loop, evict)

    @staticmethod
    def _on_loop(loop: asyncio.AbstractEventLoop, action: Callable[[], object]) -> None:
        with contextlib.suppress(RuntimeError):  # closed meanwhile: the exit hook or its close_all() stops it
            loop.call_soon_threadsafe(action)

    def _closed(self, session: S) -> None:
        self._closing.pop(session, None)
        with self._lock:
            self._stopped.discard(session)

    def loops(self) -> set[asyncio.AbstractEventLoop]:
        """The open event loops the pool's sessions and spares belong to (each is closed by :meth:`close_all` run on
        it)."""
        found = self._loops() | {session.loop for session in list(self._closing)}
        return {loop for loop in found if not loop.is_closed()}

    async def close_all(self) -> None:
        """Close every session and spare of the running loop (and wait for those closing in the background); kill
        the processes of sessions whose loop is closed. Those of other open loops are left to a ``close_all()`` on
        their own loop."""
        loop = running_loop()
        sessions: list[S] = []
        for key, session in list(self._sessions.items()):
            if session.loop is loop or session.loop.is_closed():
                del self._sessions[key]
                self.budget.release(session)
                if session.loop is loop:
                    sessions.append(session)
                else:
                    session.kill()
        spares = [s for s in self._spares if s.loop is loop or s.loop.is_closed()]
        for spare in spares:
            self._drop_spare(spare)
        starting: list[asyncio.Task[S | None]] = []
        waiting: list[asyncio.Task[S | None]] = []
        for spare in spares:
            ready = spare.ready()
            if spare.loop is not loop:
                if (running := spare.running()) is not None:
                    running.kill()
                continue
            if ready is not None:
                sessions.append(ready)
            elif not spare.start.spawning:
                spare.task.cancel()  # still waiting for its delay: nothing was started
                waiting.append(spare.task)
            elif not spare.task.done():
                starting.append(spare.task)
        # Spares stopped while they started: their own callback closes them once started (into _closing).
        unwanted = [spare.task for spare in list(self._unwanted) if spare.loop is loop and not spare.task.done()]
        for spare in list(self._unwanted):
            if spare.loop.is_closed() and (running := spare.running()) is not None:
                running.kill()
        if waiting:
            await asyncio.wait(waiting)
        if starting or unwanted:
            # A spare still starting is let finish and then closed like the others: killed mid-start, the CLI
            # makes the SDK log a fatal error; a start that hangs is cancelled after a while.
            _, hanging = await asyncio.wait([*starting, *unwanted], timeout=_SPARE_START_GRACE_SECONDS)
            for task in hanging:
                task.cancel()
            if hanging:
                await asyncio.wait(hanging)
            sessions += [s for task in starting if (s := _started(task)) is not None]
        for session in list(self._closing):
            if session.loop.is_closed():
                session.kill()
        closing = [task for session, task in self._closing.items() if session.loop is loop]
        await asyncio.gather(*(session.close() for session in sessions if session.loop is loop))
        if closing:
            await asyncio.wait(closing)

    def terminate_all(self) -> None:
        """Stop the processes of every idle session and spare now, from synchronous code (their loops tidy up)."""
        spares = [session for spare in [*self._spares, *self._unwanted] if (session := spare.running()) is not None]
        for session in [*list(self._sessions.values()), *spares, *list(self._closing)]:
            session.terminate()

    def kill_all(self) -> None:
        """Synchronous cleanup (interpreter exit)."""
        spares = [session for spare in [*self._spares, *self._unwanted] if (session := spare.running()) is not None]
        for session in [*self._sessions.values(), *spares, *self._closing]:
            session.kill()
        for session in list(self._sessions.values()):
            self.budget.release(session)
        for spare in list(self._spares):
            self.budget.release(spare)
        self._sessions.clear()
        self._spares.clear()

    def __len__(self) -> int:
        return len(self._sessions)


_CLOCK_RECHECK_SECONDS = 1.0
_CLOCK_MIN_INTERVAL_SECONDS = 0.2
"""After asking a running loop to trim the pool, the clock checks again this much later (the loop may have stopped
before it got to it)."""
_PAUSED_CONNECT_SECONDS = 50.0
"""The longest a spare may be connecting while its loop is paused before the clock stops it. The SDK gives a CLI's
connect at least 60 s (its ``initialize`` request), on the loop's clock, which goes on while the loop is paused: a
spare still connecting when its loop runs again after that fails its start anyway."""
_SPARE_START_GRACE_SECONDS = 10.0
"""How long closing waits for a spare still starting before it cancels the start."""


def _started(task: asyncio.Task[S | None]) -> S | None:
    return task.result() if task.done() and not task.cancelled() and task.exception() is None else None


async def _start_spare(factory: SpareFactory[S], start: _SpareStart, spawned: Callable[[S], None]) -> S | None:
    if not await start.wait():
        logger.debug("a spare CLI is not started: the idle budget holds more recently used CLIs")
        return None
    try:
        return await factory(spawned)
    except asyncio.CancelledError:
        raise
    except Exception as error:
        logger.debug("a spare CLI session failed to start (%s); the next new conversation starts its own", error)
        return None


async def _close_or_kill(session: PooledSession) -> None:
    """Close a retired session; if that fails or is cancelled (the loop shutting down), kill its process."""
    try:
        await session.close()
    except asyncio.CancelledError:
        session.kill()
        raise
    except Exception as error:
        logger.debug("closing an idle CLI session failed (%s); killing its process", error)
        session.kill()
