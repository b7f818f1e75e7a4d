"""CLI sessions: one Claude Code process each, owned by a dedicated task, reusable across turns.

``ClaudeSDKClient`` must be connected, used and disconnected inside one task. A :class:`CLISession` therefore runs
the client in an owner task and serves turns through queues, so a turn may come from any task on the same event
loop (an agent run, a stream, a later run continuing the conversation). Every exit path of the owner task
disconnects the client, which stops the CLI and its stdio MCP children.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from anyio.abc import Process
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from claude_agent_sdk.types import Message

from claudecode_model._compat import cli_process, close_process_pipes, keep_api_error_fields
from claudecode_model._process.clock import ClockHandle, call_at
from claudecode_model._process.slots import starting_slots
from claudecode_model._sessions.trace_context import untraced_context
from claudecode_model.exceptions import CLIInterruptedError

if TYPE_CHECKING:
    from claudecode_model._tools.cli_executed import RunToolRouter
    from claudecode_model._tools.servers import ServedTools

__all__ = [
    "SPARE_START_DELAY",
    "WARM_UP_TIMEOUT",
    "CLISession",
    "Delivery",
    "PooledSession",
    "SessionPool",
    "SpareFactory",
    "ToolsWaiting",
    "warm_up_client",
]

logger = logging.getLogger(__name__)

keep_api_error_fields()  # the typed errors of a failed turn read the API error type and code the CLI reports

_STOP_GRACE_SECONDS = 2.0


@dataclass
class _StopMark:
    """Whether the library stopped a session's CLI process on purpose (set before the signal is sent)."""

    stopped: bool = False


_STOP_MARK: ContextVar[_StopMark | None] = ContextVar("claudecode_model_stop_mark", default=None)
"""Set in each session's owner task, so every task the SDK client starts there (its message reader) sees it."""


class _QuietDeliberateStops(logging.Filter):
    """Drops the SDK's "Fatal error in message reader" about a CLI process the library stopped on purpose (an idle
    session stopped by the pool's clock or by ``close()`` in a running loop: the reader sees it exit with SIGTERM's
    status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        mark = _STOP_MARK.get()
        return mark is None or not mark.stopped


logging.getLogger("claude_agent_sdk._internal.query").addFilter(_QuietDeliberateStops())


@dataclass(frozen=True)
class ToolsWaiting:
    """Not an SDK message: the MCP handlers of these ``tool_use`` ids wait for results pydantic-ai produces (yielded
    by :meth:`CLISession.run_turn` among the SDK messages, so a turn can tell the CLI waits for them)."""

    ids: frozenset[str]


class Delivery(Enum):
    """How the owner task hands one SDK message to the consumer of a turn."""

    WAKE = "wake"
    """Now: the consumer acts on it."""
    HOLD = "hold"
    """With the next message that wakes the consumer (it needs the message, but not before then)."""
    DROP = "drop"
    """Not at all: the turn has no use for it (before it costs anything more)."""


_TurnItem = Message | ToolsWaiting | BaseException | None


class _TurnOutput:
    """What the owner task hands the consumer of a turn, in order: SDK messages, :class:`ToolsWaiting`, an error,
    and ``None`` at the end; each with the time it arrived.

    An item put with ``wake=False`` waits, without waking the consumer, for the next item that does: a request that
    does not stream reads its turn's messages in a few batches rather than with a task switch for each.
    """

    def __init__(self) -> None:
        self._items: deque[tuple[_TurnItem, float]] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: _TurnItem, *, wake: bool = True) -> None:
        self._items.append((item, time.perf_counter()))
        waiter = self._waiter
        if wake and waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> tuple[_TurnItem, float]:
        """The next item and when it arrived (``time.perf_counter()``), waiting for one that wakes the consumer."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


@dataclass
class _TurnRequest:
    message: dict[str, Any] | None
    """The user message that starts the turn; ``None`` for a turn the CLI starts by itself (a resumed deferred call)."""
    output: _TurnOutput = field(default_factory=_TurnOutput)


class PooledSession(Protocol):
    """What :class:`SessionPool` needs of a session it keeps."""

    session_id: str | None
    signature: str
    seen_digest: str | None
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


class CLISession:
    """A Claude Code CLI process serving one conversation, one turn at a time."""

    def __init__(
        self,
        options: ClaudeAgentOptions,
        *,
        signature: str,
        tool_router: RunToolRouter | None = None,
        tool_servers: Sequence[ServedTools] = (),
    ) -> None:
        """A session for the CLI ``options`` describe (started by :meth:`start`).

        Args:
            options: The SDK options the CLI process is started with.
            signature: A digest of everything that fixes the session's behaviour; a turn continues the session only
                with the same signature.
            tool_router: Routes in-process tool calls to the run that owns the turn; the session lets it stop a turn.
            tool_servers: The tool servers the CLI process uses, stopped with it (IPC sessions of the stdio transport).
        """
        self.options = options
        self.signature = signature
        self.session_id: str | None = None
        self.seen_digest: str | None = None
        """Digest of the conversation the CLI's transcript holds after the last turn."""
        self.reported_cost_usd = 0.0
        """The cumulative cost this CLI process reported at the end of its last turn."""
        self.last_used = time.monotonic()
        self._loop = asyncio.get_running_loop()
        self.busy = False
        self.tool_router = tool_router
        self.tool_servers: list[ServedTools] = list(tool_servers)
        if tool_router is not None:
            tool_router.stop_turn = self.interrupt_soon
            tool_router.results.on_wait = self._tools_waiting
        self._current: _TurnRequest | None = None
        self.on_closed: list[Callable[[], None]] = []
        """Called once the CLI process is gone (after :meth:`close`, or by :meth:`kill`)."""
        self.stderr: deque[str] | None = None
        """The CLI's last stderr lines, when the creator collects them (errors of its turns report them)."""
        self._commands: asyncio.Queue[_TurnRequest | None] = asyncio.Queue()
        self._ready: asyncio.Future[None] = self._loop.create_future()
        self._owner: asyncio.Task[None] | None = None
        self._pid: int | None = None
        self._alive_this_step = False
        self._process: Process | None = None
        self._client: ClaudeSDKClient | None = None
        self._starting_client: ClaudeSDKClient | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._serving = False
        self.waiting_for_tools = False
        """The turn in progress waits for tool results pydantic-ai runs: stopping it kills the CLI at once."""
        self.delivery: Callable[[Message], Delivery] | None = None
        """How the turn in progress takes each message (``None``: every message at once, as a stream does)."""
        self.arrived = 0.0
        """When the item :meth:`run_turn` yielded last reached this process (``time.perf_counter()``)."""
        self.on_failure: Callable[[BaseException], None] | None = None
        """Told at once when a turn fails in the owner task (the CLI died), even while nobody reads the turn."""
        self._stop_mark = _StopMark()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the session was created on (and its owner task runs on)."""
        return self._loop

    @property
    def closed(self) -> bool:
        """Whether the session can serve no more turns: its owner task ended, or its CLI process has exited or is
        exiting (killed or crashed while idle, before the owner task noticed; read from ``/proc``)."""
        if self.known_closed:
            return True
        if self._alive_this_step:
            return False
        if _exiting(self._pid):
            return True
        if _running_loop() is self._loop:
            # Known alive for the rest of this step of the event loop: a turn asks several times in one step (the pool
            # prunes, takes, puts back), and each check reads /proc.
            self._alive_this_step = True
            self._loop.call_soon(self._forget_alive)
        return False

    @property
    def known_closed(self) -> bool:
        """:attr:`closed` as far as it is known without reading ``/proc``: the owner task ended, or the process can be
        waited for (what keeping and pruning idle sessions asks; taking one for a turn asks :attr:`closed`)."""
        if self._owner is None:
            return False
        if self._owner.done() or (self._process is not None and self._process.returncode is not None):
            return True
        return _exited(self._pid)

    def _forget_alive(self) -> None:
        self._alive_this_step = False

    async def start(self, *, warm_up: bool = False) -> None:
        """Start the CLI process and wait until it is connected.

        ``warm_up`` (for a spare, started ahead of its conversation) then has the CLI assemble what its first
        request needs (system prompt, tool list, context accounting) without any API call, so that the first turn
        does not pay for it.
        """
        _STARTED_SESSIONS.add(self)
        # The owner outlives the request that starts it: it must not carry that request's trace context (the MCP
        # library's spans of the in-process tool server are opened in it).
        self._owner = asyncio.create_task(
            self._own(warm_up=warm_up), name=f"claude-code-session-{uuid.uuid4().hex[:8]}", context=untraced_context()
        )
        try:
            await asyncio.shield(self._ready)
        except BaseException:
            self._stop_mark.stopped = True  # given up: what the start does next is of no interest
            self._kill_starting()  # a CLI that hangs at start never reads its end of input
            # The owner notices the killed CLI only when the SDK's start gives up (a second or two): the caller's
            # timeout or cancellation must not wait for that, the rest of the cleanup goes on in the background.
            cleanup = self._loop.create_task(self._close_given_up_start(), name="claude-code-session-close")
            self._background.add(cleanup)
            cleanup.add_done_callback(self._background.discard)
            raise

    async def _close_given_up_start(self) -> None:
        try:
            await self.close()
        finally:
            if self._ready.done() and not self._ready.cancelled():
                self._ready.exception()  # the start was given up: its late failure is known, not "never retrieved"

    def _kill_starting(self) -> None:
        """Kill the CLI process of a start that did not complete (timed out or cancelled), if it was spawned."""
        client = self._starting_client
        process = cli_process(client) if client is not None and self._client is None else None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    async def _own(self, *, warm_up: bool) -> None:
        _STOP_MARK.set(self._stop_mark)
        client = ClaudeSDKClient(self.options)
        self._starting_client = client
        started = time.monotonic()
        gate = starting_slots()
        try:
            if gate.used >= gate.limit:
                logger.debug("waiting to start a CLI: %d are starting already", gate.used)
            await gate.acquire(_nothing_to_evict)
            try:
                await client.connect()
            finally:
                gate.release()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
                if self._stop_mark.stopped:
                    self._ready.exception()  # nobody waits for a start that was given up
            return
        self._process = cli_process(client)
        self._pid = self._process.pid if self._process is not None else None
        self._client = client
        logger.debug("Claude Code CLI started: pid %s, ready in %.2f s", self._pid, time.monotonic() - started)
        try:
            if warm_up:
                await warm_up_client(client)
            self._ready.set_result(None)
            while (turn := await self._commands.get()) is not None:
                await self._serve(client, turn)
        finally:
            if not self._ready.done():  # closed while warming up
                self._ready.set_exception(CLIInterruptedError("The Claude Code session was closed while starting"))
            if self.waiting_for_tools:
                # Its tool calls would fail, and the CLI would send Claude one more request before it exits.
                _terminate(self._pid, signal.SIGKILL)
            try:
                await asyncio.shield(_disconnect(client))
            except BaseException:
                _kill_if_alive(self._pid)
                raise
            finally:
                if self._process is not None:
                    close_process_pipes(self._process)

    async def _serve(self, client: ClaudeSDKClient, turn: _TurnRequest) -> None:
        async def one_message(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
            yield message

        self._serving = True
        self._current = turn
        try:
            if turn.message is not None:
                await client.query(one_message(turn.message))
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    self.session_id = message.session_id
                delivery = Delivery.WAKE if self.delivery is None else self.delivery(message)
                if delivery is not Delivery.DROP:
                    turn.output.put(message, wake=delivery is Delivery.WAKE)
        except asyncio.CancelledError:
            # Only close() cancels the owner: the consumer of the turn was not cancelled, its turn was stopped.
            turn.output.put(CLIInterruptedError("The Claude Code session was closed during the turn"))
            raise
        except Exception as error:
            turn.output.put(error)
            # A client that raised mid-turn is not reusable: end the owner loop.
            self._commands.put_nowait(None)
            if self.on_failure is not None:
                self.on_failure(error)
        finally:
            self._serving = False
            self._current = None
            turn.output.put(None)

    def _tools_waiting(self, ids: frozenset[str]) -> None:
        if self._current is not None:
            self._current.output.put(ToolsWaiting(ids))

    async def run_turn(self, message: dict[str, Any] | None) -> AsyncGenerator[Message | ToolsWaiting, None]:
        """Send one user message and yield the SDK messages up to and including the ``ResultMessage``.

        With ``message=None`` nothing is sent: a session resumed at a deferred tool call starts that turn by itself.
        :class:`ToolsWaiting` items say which tool calls wait for pydantic-ai's results.
        """
        if self._owner is not None and self._owner.done():
            raise RuntimeError("CLI session is closed")
        self.busy = True
        turn = _TurnRequest(message)
        self._commands.put_nowait(turn)
        try:
            while True:
                item, self.arrived = await turn.output.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.busy = False
            self.last_used = time.monotonic()

    async def say_during_turn(self, message: dict[str, Any]) -> None:
        """Send a user message while a turn runs: the CLI gives it to Claude with its next API request of the turn
        (after the tool results), as a message the user sent while Claude was working."""
        client = self._client
        if client is None or self.closed:
            raise CLIInterruptedError("The Claude Code session is closed")

        async def one_message() -> AsyncIterator[dict[str, Any]]:
            yield message

        await client.query(one_message())

    def interrupt_soon(self) -> None:
        """Ask the CLI to stop the turn in progress (from any task; returns at once)."""
        client = self._client
        if client is None or self.closed:
            return

        async def interrupt() -> None:
            try:
                await client.interrupt()
            except Exception as error:
                logger.debug("could not interrupt the CLI turn: %s", error)

        task = self._loop.create_task(interrupt())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Stop the CLI process and wait for the owner task, then stop the tool servers.

        A turn in flight is stopped at once (its consumer gets :class:`CLIInterruptedError`); an idle session
        ends gracefully (end of input, then SIGTERM and SIGKILL after grace periods).
        """
        owner = self._owner
        if owner is None:
            await self._stop_tool_servers()
            self._closed_now()
            return
        if not owner.done():
            self._commands.put_nowait(None)
            if self._serving:
                # Mid-turn the CLI does not exit on end of input: stop it, and the turn with it.
                _terminate(self._pid)
                owner.cancel()
            done, _ = await asyncio.wait({owner}, timeout=_STOP_GRACE_SECONDS)
            if not done:
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(owner), timeout=_STOP_GRACE_SECONDS)
        _kill_if_alive(self._pid)
        await self._stop_tool_servers()
        self._closed_now()

    def _closed_now(self) -> None:
        callbacks, self.on_closed = self.on_closed, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                logger.exception("a callback of a closed CLI session failed")

    async def _stop_tool_servers(self) -> None:
        servers, self.tool_servers = self.tool_servers, []
        for server in servers:
            await server.stop()

    async def abort(self, *, at_once: bool = False) -> None:
        """Stop a session whose turn did not end cleanly (failed, timed out, cancelled).

        The CLI process is sent SIGTERM and the tool servers' files are removed synchronously first, so that
        nothing is left even if this coroutine is cancelled at its first ``await`` (as a cancelled agent run does
        with its cleanup); the rest of the shutdown is shielded and completes in the background if so.
        ``at_once`` sends SIGKILL instead: a turn waiting for tool results must not see its calls fail, which the CLI
        would answer with one more API request before it exits.
        """
        self._stop_mark.stopped = True
        _terminate(self._pid, signal.SIGKILL if at_once else signal.SIGTERM)
        for server in self.tool_servers:
            server.discard()
        cleanup = self._loop.create_task(self.close())
        self._background.add(cleanup)
        cleanup.add_done_callback(self._background.discard)
        await asyncio.shield(cleanup)

    def terminate(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Send the CLI process SIGTERM (or ``sig``), from any thread: its owner task notices once its event loop
        runs again (what the pools' clock does to an idle session of a loop that does not run)."""
        if not _exited(self._pid):
            self._stop_mark.stopped = True
            _terminate(self._pid, sig)

    def kill(self) -> None:
        """Synchronous last resort, for sessions whose event loop is gone (or still connecting)."""
        pid = self._pid
        if self._process is not None and self._process.returncode is not None:
            pid = None  # already reaped: the number may belong to another process by now
        elif pid is None and self._starting_client is not None:
            process = cli_process(self._starting_client)
            pid = process.pid if process is not None else None
        _kill_if_alive(pid)
        for server in self.tool_servers:
            server.discard()
        self._closed_now()


async def _disconnect(client: ClaudeSDKClient) -> None:
    await asyncio.wait_for(client.disconnect(), timeout=_STOP_GRACE_SECONDS * 2)


def _exited(pid: int | None) -> bool:
    """Whether the child ``pid`` has exited, without reaping it (its owner's watcher may not have seen it yet)."""
    if pid is None or not hasattr(os, "waitid"):
        return False
    try:
        status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # already reaped
    except OSError:
        return False
    return status is not None


def _exiting(pid: int | None) -> bool:
    """Whether the child ``pid`` was killed and is still tearing down (a large multi-threaded process takes a
    while): its main thread is a zombie already, though the process cannot be waited for yet."""
    if pid is None:
        return False
    # Read with the os module: this runs for every session a turn takes, and a buffered file object costs several
    # times more.
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return False
    try:
        stat = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    return stat[stat.rindex(b")") + 2 :][:1] in (b"Z", b"X")


def _terminate(pid: int | None, sig: signal.Signals = signal.SIGTERM) -> None:
    """Send SIGTERM (or ``sig``), leaving the reaping to the SDK's transport (which waits for the process)."""
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _kill_if_alive(pid: int | None) -> None:
    if pid is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                finished, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return
            if finished:
                return
            time.sleep(0.01)


def _nothing_to_evict() -> bool:
    return False  # a start waits for another start to finish, never stops a process


WARM_UP_TIMEOUT = 5.0
"""Seconds a spare's warm-up may take before the spare is handed out without it."""


async def warm_up_client(client: ClaudeSDKClient) -> None:
    """Ask the CLI for its context usage: it builds the first request's system prompt and tool list to answer,
    and makes no API call. A failed or slow warm-up only costs the first turn that time again."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(WARM_UP_TIMEOUT):
            await client.get_context_usage()
    except Exception as error:  # a warm-up is an optimisation: the session is usable without it
        logger.debug("warming up a spare CLI session failed (%s); it is used as it is", error)
        return
    logger.debug("spare CLI session warmed up in %.3f s", time.monotonic() - started)


S = TypeVar("S", bound=PooledSession)

SpareFactory = Callable[[], Awaitable[S | None]]
"""Starts a spare session (``None``: no process slot was free, nothing started)."""


SPARE_START_DELAY = 0.3
"""Seconds a spare waits after the turn that asked for it before its CLI starts (unless claimed or awaited first).

A CLI start costs about a second of CPU; started at once, it competes with what the caller does right after the
turn (pydantic-ai ending the run, the next request of the same conversation). Measured in the benchmarks."""


@dataclass(eq=False)
class _SpareStart:
    """When a spare's CLI may start: after its delay, or at once when a request needs it (``go``)."""

    delay: float
    go: asyncio.Event = field(default_factory=asyncio.Event)
    spawning: bool = False

    async def wait(self) -> None:
        if self.delay > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.delay):
                    await self.go.wait()
        self.spawning = True


@dataclass(eq=False)
class _Spare(Generic[S]):
    """A session started ahead of the conversation that will claim it."""

    signature: str
    factory: SpareFactory[S]
    task: asyncio.Task[S | None]
    start: _SpareStart

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.task.get_loop()

    def ready(self) -> S | None:
        """The started session, if the start is over and succeeded."""
        if not self.task.done() or self.task.cancelled() or self.task.exception() is not None:
            return None
        return self.task.result()


class SessionPool(Generic[S]):
    """Idle CLI sessions kept for continuation, and spare sessions started ahead of new conversations.

    The one place sessions are kept between turns: a turn takes the session it continues from here, and gives it
    back when it ends cleanly; a new conversation claims a spare with its session signature from here.

    Bounds: ``max_idle`` sessions are kept for ``idle_timeout`` seconds; more (up to the model's process cap) for
    ``surplus_idle_timeout`` seconds, and the oldest is the first stopped when a new process needs a slot. At most
    ``max_spares`` spares per signature and ``max_spares_total`` in all, each stopped after ``idle_timeout`` unused.

    Sessions that fall out of the bounds are closed in the background: stopping a CLI process takes 0.1-0.2 s,
    which no turn should wait for. :meth:`close_all` waits for those closes too. The bounds hold by time, whether
    or not another request comes and whether or not the sessions' event loop runs: the pool's next deadline is
    kept by :mod:`claudecode_model._process.clock`, whose thread has a running loop trim the pool, and stops the
    processes
    of a loop that does not run (a ``run_sync`` program between calls) itself; that loop tidies up when it runs
    again.
    """

    def __init__(
        self,
        *,
        max_idle: int,
        idle_timeout: float,
        surplus_idle_timeout: float = 0.0,
        max_spares: int = 0,
        max_spares_total: int = 0,
        spare_delay: float | None = None,
    ) -> None:
        self.max_idle = max_idle
        self.idle_timeout = idle_timeout
        self.surplus_idle_timeout = surplus_idle_timeout
        self.max_spares = max_spares
        self.max_spares_total = max_spares_total
        self.spare_delay = SPARE_START_DELAY if spare_delay is None else spare_delay
        self._sessions: dict[str, S] = {}
        self._spares: list[_Spare[S]] = []
        self._closing: dict[S, asyncio.Task[None]] = {}
        self._lock = threading.Lock()
        """Guards who gets an idle session: a turn taking it, or the clock's thread stopping it."""
        self._stopped: set[S] = set()
        """Idle sessions whose process the clock's thread stopped, for their loop to tidy up."""
        self._clock: ClockHandle | None = None
        _LIVE_POOLS.add(self)

    def take(self, session_id: str, *, signature: str, digest: str) -> S | None:
        """Remove and return a live session that has seen exactly ``digest`` with the same options."""
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.closed or session.loop is not _running_loop() or session.busy:
            return None
        if session.signature != signature or session.seen_digest != digest:
            return None
        with self._lock:
            if session in self._stopped or self._sessions.get(session_id) is not session:
                return None
            del self._sessions[session_id]
        return session

    async def put(self, session: S) -> None:
        """Keep ``session`` for a later turn, closing what falls out of the bounds."""
        if self.max_idle <= 0 or session.session_id is None or session.known_closed:
            await session.close()
            return
        previous = self._sessions.pop(session.session_id, None)
        if previous is not None and previous is not session:
            self._retire(previous)
        self._sessions[session.session_id] = session
        await self.prune()

    async def prune(self) -> None:
        """Close expired sessions, sessions of closed event loops, and the oldest over the limit once their grace
        is over; replace spares that died while idle."""
        self._trim()

    # --- the bounds by time ---------------------------------------------------------------------------------------

    def _deadlines(self, loop: asyncio.AbstractEventLoop) -> list[tuple[float, S]]:
        """When each idle session of ``loop`` falls out of the bounds: ``idle_timeout`` after its last use, or
        ``surplus_idle_timeout`` for the oldest beyond ``max_idle``."""
        kept = sorted(
            (s for s in list(self._sessions.values()) if s.loop is loop and s not in self._stopped),
            key=lambda s: s.last_used,
        )
        surplus = len(kept) - self.max_idle
        return [
            (s.last_used + (min(self.surplus_idle_timeout, self.idle_timeout) if i < surplus else self.idle_timeout), s)
            for i, s in enumerate(kept)
        ]

    def _spare_deadlines(self, loop: asyncio.AbstractEventLoop) -> list[tuple[float, _Spare[S]]]:
        found = []
        for spare in list(self._spares):
            if spare.loop is loop and (session := spare.ready()) is not None and session not in self._stopped:
                found.append((session.last_used + self.idle_timeout, spare))
        return found

    def _loops(self) -> set[asyncio.AbstractEventLoop]:
        """The open event loops the pool's sessions and spares belong to (those of a closed loop have no deadline:
        the next trim on a running loop, or the exit hook, kills them)."""
        loops = {s.loop for s in list(self._sessions.values())} | {s.loop for s in list(self._spares)}
        return {loop for loop in loops if not loop.is_closed()}

    def _trim(self) -> None:
        """On the running loop: close what is out of the bounds now, then wait for the next deadline."""
        now = time.monotonic()
        loop = _running_loop()
        for key, session in list(self._sessions.items()):
            if session.loop is not loop:
                if session.loop.is_closed():
                    session.kill()
                    del self._sessions[key]
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
                if spare in self._spares and (unused := spare.ready()) is not None:
                    logger.debug("stopping a spare CLI process unused for %.0f s", self.idle_timeout)
                    self._stopped.add(unused)
                    unused.terminate()

    def _prune_spares(self, now: float, loop: asyncio.AbstractEventLoop | None) -> None:
        for spare in list(self._spares):
            if spare.loop is not loop:
                if spare.loop.is_closed():
                    self._spares.remove(spare)
                    if (session := spare.ready()) is not None:
                        session.kill()
                continue
            if not spare.task.done():
                continue
            session = spare.ready()
            if session is None:  # failed to start: forgotten (the next fresh conversation starts another)
                self._spares.remove(spare)
                continue
            if session in self._stopped or now - session.last_used > self.idle_timeout:
                self._spares.remove(spare)
                logger.debug("closing a spare CLI session unused for %.0f s", now - session.last_used)
                self._retire(session)
            elif session.known_closed:  # died while idle: replaced, never used
                self._spares.remove(spare)
                self._retire(session)
                self.start_spare(spare.signature, spare.factory)

    # --- spares ---------------------------------------------------------------------------------------------

    def spares(self, signature: str | None = None) -> int:
        """How many spares (ready or starting) the pool holds on this loop, for ``signature`` or in all."""
        loop = _running_loop()
        return sum(1 for s in self._spares if s.loop is loop and signature in (None, s.signature))

    def start_spare(self, signature: str, factory: SpareFactory[S]) -> bool:
        """Start a spare for ``signature`` in the background unless the bounds are reached; whether it did."""
        if self.spares(signature) >= self.max_spares or len(self._spares) >= self.max_spares_total:
            return False
        loop = asyncio.get_running_loop()
        start = _SpareStart(self.spare_delay)
        task = loop.create_task(_start_spare(factory, start), name="claude-code-spare-start")
        spare = _Spare(signature, factory, task, start)
        self._spares.append(spare)
        task.add_done_callback(lambda _: self._schedule())  # its idle deadline
        return True

    async def wait_spare(self, signature: str) -> bool:
        """Wait until the spares for ``signature`` have started; whether one is ready."""
        loop = _running_loop()
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

    async def claim_spare(self, signature: str) -> S | None:
        """Remove and return a live spare started with ``signature`` (waiting for one still starting).

        ``None`` if there is none, or if it failed to start or died: a dead spare is stopped and replaced, never
        used. The removal is synchronous, so of two concurrent claims of one spare one wins, the other gets
        ``None``.
        """
        loop = _running_loop()
        spare = next((s for s in self._spares if s.loop is loop and s.signature == signature), None)
        if spare is None:
            return None
        with self._lock:  # not while the clock's thread stops it
            self._spares.remove(spare)
        spare.start.go.set()
        try:
            session = await asyncio.shield(spare.task)
        except asyncio.CancelledError:
            if spare.task.cancelled():
                return None
            # The claimer was cancelled while the spare started: stop it once it is up.
            spare.task.add_done_callback(self._retire_started)
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

    def _retire_started(self, task: asyncio.Task[S | None]) -> None:
        if not task.cancelled() and task.exception() is None and (session := task.result()) is not None:
            self._retire(session)

    def evict_idle(self) -> bool:
        """Stop one process that is not in use, to free its slot: a spare, else the least recently used idle
        session. Whether there was one."""
        loop = _running_loop()
        spares = [s for s in self._spares if s.loop is loop]
        for spare in sorted(spares, key=lambda s: s.task.done(), reverse=True):  # a ready spare first
            self._spares.remove(spare)
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

    def _retire(self, session: S) -> None:
        """Close ``session`` in a background task of its loop (tracked until done)."""
        if session in self._closing:
            return
        task = session.loop.create_task(_close_or_kill(session), name="claude-code-session-close")
        self._closing[session] = task
        task.add_done_callback(lambda _: self._closed(session))

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
        loop = _running_loop()
        sessions: list[S] = []
        for key, session in list(self._sessions.items()):
            if session.loop is loop or session.loop.is_closed():
                del self._sessions[key]
                if session.loop is loop:
                    sessions.append(session)
                else:
                    session.kill()
        spares = [s for s in self._spares if s.loop is loop or s.loop.is_closed()]
        self._spares = [s for s in self._spares if s not in spares]
        starting: list[asyncio.Task[S | None]] = []
        waiting: list[asyncio.Task[S | None]] = []
        for spare in spares:
            ready = spare.ready()
            if spare.loop is not loop:
                if ready is not None:
                    ready.kill()
                continue
            if ready is not None:
                sessions.append(ready)
            elif not spare.start.spawning:
                spare.task.cancel()  # still waiting for its delay: nothing was started
                waiting.append(spare.task)
            elif not spare.task.done():
                starting.append(spare.task)
        if waiting:
            await asyncio.wait(waiting)
        if starting:
            # A spare still starting is let finish and then closed like the others: killed mid-start, the CLI
            # makes the SDK log a fatal error; a start that hangs is cancelled after a while.
            _, hanging = await asyncio.wait(starting, timeout=_SPARE_START_GRACE_SECONDS)
            for task in hanging:
                task.cancel()
            if hanging:
                await asyncio.wait(hanging)
            sessions += [s for task in starting if not task.cancelled() and (s := _started(task)) is not None]
        for session in list(self._closing):
            if session.loop.is_closed():
                session.kill()
        closing = [task for session, task in self._closing.items() if session.loop is loop]
        await asyncio.gather(*(session.close() for session in sessions if session.loop is loop))
        if closing:
            await asyncio.wait(closing)

    def terminate_all(self) -> None:
        """Stop the processes of every idle session and spare now, from synchronous code (their loops tidy up)."""
        spares = [session for spare in list(self._spares) if (session := spare.ready()) is not None]
        for session in [*list(self._sessions.values()), *spares, *list(self._closing)]:
            session.terminate()

    def kill_all(self) -> None:
        """Synchronous cleanup (interpreter exit)."""
        spares = [session for spare in self._spares if (session := spare.ready()) is not None]
        for session in [*self._sessions.values(), *spares, *self._closing]:
            session.kill()
        self._sessions.clear()
        self._spares.clear()

    def __len__(self) -> int:
        return len(self._sessions)


_CLOCK_RECHECK_SECONDS = 1.0
_CLOCK_MIN_INTERVAL_SECONDS = 0.2
"""After asking a running loop to trim the pool, the clock checks again this much later (the loop may have stopped
before it got to it)."""
_SPARE_START_GRACE_SECONDS = 10.0
"""How long closing waits for a spare still starting before it cancels the start."""


def _started(task: asyncio.Task[S | None]) -> S | None:
    return task.result() if task.done() and not task.cancelled() and task.exception() is None else None


async def _start_spare(factory: SpareFactory[S], start: _SpareStart) -> S | None:
    await start.wait()
    try:
        return await factory()
    except asyncio.CancelledError:
        raise
    except Exception as error:
        logger.debug("a spare CLI session failed to start (%s); the next new conversation starts its own", error)
        return None


_LIVE_POOLS: weakref.WeakSet[SessionPool[Any]] = weakref.WeakSet()
_STARTED_SESSIONS: weakref.WeakSet[CLISession] = weakref.WeakSet()


@atexit.register
def _kill_sessions_at_exit() -> None:
    """Kill the CLI processes of every pool still alive when the interpreter exits."""
    for pool in list(_LIVE_POOLS):
        pool.kill_all()
    for session in list(_STARTED_SESSIONS):
        session.kill()  # sessions in no pool: spares still starting, turns of a loop that was left


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


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
