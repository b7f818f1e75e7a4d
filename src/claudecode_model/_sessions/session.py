"""CLI sessions: one Claude Code process each, owned by a dedicated task, reusable across turns.

``ClaudeSDKClient`` must be connected, used and disconnected inside one task. A :class:`CLISession` therefore runs
the client in an owner task and serves turns through queues, so a turn may come from any task on the same event
loop (an agent run, a stream, a later run continuing the conversation). Every exit path of the owner task
disconnects the client, which stops the CLI and its stdio MCP children, and then stops what is left of the CLI's
processes: the commands its built-in tools started (the Bash tool's ``bash -c``, in a session of its own, and its
children, re-parented to PID 1 once the CLI is gone) are found by the CLI's tag
(:mod:`claudecode_model._process.oscalls`). Every signal sent to the CLI goes to its process group and its tagged
processes as well, and the lifeline (:mod:`claudecode_model._process.lifeline`) stops them if this program dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, SystemMessage
from claude_agent_sdk.types import Message

from claudecode_model._compat import (
    add_sdk_mcp_server,
    close_process_pipes,
    keep_api_error_fields,
    options_resumed_from_store,
    send_control_request,
)
from claudecode_model._process import lifeline
from claudecode_model._process.clock import running_loop
from claudecode_model._process.exit import kill_at_exit
from claudecode_model._process.oscalls import (
    CLI_TAG_VARIABLE,
    process_exited,
    process_exiting,
    reaped,
    signal_group,
    signal_process,
    signal_tagged,
    stop_child,
    stop_tagged,
)
from claudecode_model._process.slots import starting_slots
from claudecode_model._sessions.claim import CLAIM_TIMEOUT, ClaimRefusedError, SessionClaim
from claudecode_model._sessions.sdk_advice import sdk_advice_silenced
from claudecode_model._sessions.trace_context import untraced_context
from claudecode_model._sessions.transport import CLITransport, CLITransports, SubprocessTransports
from claudecode_model.exceptions import CLIInterruptedError

if TYPE_CHECKING:
    from claudecode_model._tools.router import RunToolRouter
    from claudecode_model._tools.servers import ServedTools

__all__ = ["WARM_UP_TIMEOUT", "CLISession", "Delivery", "RewindRefusedError", "ToolsWaiting", "warm_up_client"]

logger = logging.getLogger(__name__)

_STOP_GRACE_SECONDS = 2.0
_COMMANDS_GRACE_SECONDS = 0.5
"""How long the commands a CLI left running get between SIGTERM and SIGKILL once the CLI is gone."""
_SPAWN_POLL_SECONDS = 0.005
_EXIT_REPORT_SECONDS = 2.0
"""How long a close waits for asyncio to report the exit of a CLI that ended before it closes its pipes."""
_REWIND_TIMEOUT_SECONDS = 10.0
"""The longest an idle CLI may take to answer a rewind (it takes 5-9 ms; no API call)."""


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


_QUIET_DELIBERATE_STOPS = _QuietDeliberateStops()


def _quiet_deliberate_stops() -> None:
    """Install the filter on the SDK's logger (at the first session start, not at import; a filter already there is
    not added again)."""
    logging.getLogger("claude_agent_sdk._internal.query").addFilter(_QUIET_DELIBERATE_STOPS)


class RewindRefusedError(RuntimeError):
    """The CLI did not rewind its conversation (see :meth:`CLISession.rewind`): the session is not used."""


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


class CLISession:
    """A Claude Code CLI process serving one conversation, one turn at a time."""

    def __init__(
        self,
        options: ClaudeAgentOptions,
        *,
        signature: str,
        tool_router: RunToolRouter | None = None,
        tool_servers: Sequence[ServedTools] = (),
        stderr: deque[str] | None = None,
        transports: CLITransports | None = None,
    ) -> None:
        """A session for the CLI ``options`` describe (started by :meth:`start`).

        Args:
            options: The SDK options the CLI process is started with.
            signature: A digest of everything that fixes the session's behaviour; a turn continues the session only
                with the same signature.
            tool_router: Routes in-process tool calls to the run that owns the turn; the session lets it stop a turn.
            tool_servers: The tool servers the CLI process uses, stopped with it (IPC sessions of the stdio transport).
            stderr: Where the creator collects the CLI's last stderr lines (errors of its turns report them).
            transports: How the CLI is reached (by default a child process, :class:`SubprocessTransports`).
        """
        self.options = options
        self.signature = signature
        self.session_id: str | None = None
        self.served_sessions: set[str] = set()
        """Every Claude Code session id this process has reported (a resumed one may fork into another)."""
        self.seen_digest: str | None = None
        """Digest of the conversation the CLI's transcript holds after the last turn."""
        self.opening_uuid: str | None = None
        """The uuid of the user message that opened the conversation this process holds, when the process started
        that conversation empty: a rewind to it (:meth:`rewind`) empties the conversation again."""
        self.conversation_points: set[str] = set()
        """The transcript entries the turns of that conversation ended at (a rewind cuts them off)."""
        self.reported_cost_usd = 0.0
        """The cumulative cost this CLI process reported at the end of its last turn."""
        self.last_used = time.monotonic()
        self._loop = asyncio.get_running_loop()
        self.busy = False
        self.tool_router = tool_router
        self.tool_servers: list[ServedTools] = list(tool_servers)
        if tool_router is not None:
            tool_router.attach(stop_turn=self.interrupt_soon, on_wait=self._tools_waiting, relist=self.relist_tools)
        self._current: _TurnRequest | None = None
        self._on_closed: list[Callable[[], None]] = []
        self._on_spawned: list[Callable[[], None]] = []
        self.stderr = stderr
        """The CLI's last stderr lines, when the creator collects them (errors of its turns report them)."""
        self._commands: asyncio.Queue[_TurnRequest | None] = asyncio.Queue()
        self._ready: asyncio.Future[None] = self._loop.create_future()
        self._owner: asyncio.Task[None] | None = None
        self._pid: int | None = None
        self._alive_this_step = False
        self._process: Process | None = None
        self._client: ClaudeSDKClient | None = None
        self._transports = transports or _SUBPROCESSES
        self._transport: CLITransport | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._disconnecting: asyncio.Task[None] | None = None
        """The owner's disconnect from the CLI, once it began (see :meth:`close`)."""
        self._serving = False
        self.waiting_for_tools = False
        """The turn in progress waits for tool results pydantic-ai runs: stopping it kills the CLI at once."""
        self._delivery: Callable[[Message], Delivery] | None = None
        self.arrived = 0.0
        """When the item :meth:`run_turn` yielded last reached this process (``time.perf_counter()``)."""
        self._on_failure: Callable[[BaseException], None] | None = None
        self._stop_mark = _StopMark()
        self._tag = options.env.get(CLI_TAG_VARIABLE) if isinstance(options.env, dict) else None
        """The CLI's tag: its processes, and the commands it started, carry it (see ``_process/oscalls.py``)."""
        self._processes_ended = False
        self._connecting = False
        """The owner task is inside the SDK's ``connect()``: the CLI process is being spawned, or was."""
        self.observer: Callable[[Message], None] | None = None
        """Told of every message the CLI sends during a turn, in the owner task (a turn's inactivity watchdog)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the session was created on (and its owner task runs on)."""
        return self._loop

    def when_closed(self, *callbacks: Callable[[], None]) -> None:
        """Call ``callbacks`` once the CLI process is gone (after :meth:`close`, or by :meth:`kill`)."""
        self._on_closed.extend(callbacks)

    def when_spawned(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once :meth:`start` has spawned the CLI's process (a CLI that is no process: once it is
        connected); never if the start fails before."""
        self._on_spawned.append(callback)

    def _spawned(self) -> None:
        callbacks, self._on_spawned = self._on_spawned, []
        for callback in callbacks:
            callback()

    def deliver_with(self, delivery: Callable[[Message], Delivery] | None) -> None:
        """How the turn in progress takes each message (``None``: every message at once, as a stream does)."""
        self._delivery = delivery

    def note_cost(self, total_cost_usd: float) -> None:
        """Remember the cumulative cost the CLI reported at the end of a turn."""
        self.reported_cost_usd = total_cost_usd

    def note_seen(self, digest: str | None) -> None:
        """Remember the digest of the conversation the transcript holds now (``None``: more than any history)."""
        self.seen_digest = digest

    def wait_for_tools(self, on_failure: Callable[[BaseException], None]) -> None:
        """The turn in progress waits for tool results pydantic-ai runs: stopping it kills the CLI at once, and
        ``on_failure`` is told at once when the CLI dies meanwhile, even while nobody reads the turn."""
        self.waiting_for_tools = True
        self._on_failure = on_failure

    def tools_answered(self) -> None:
        """The turn goes on with pydantic-ai's tool results (see :meth:`wait_for_tools`)."""
        self.waiting_for_tools = False
        self._on_failure = None

    @property
    def closed(self) -> bool:
        """Whether the session can serve no more turns: its owner task ended, or its CLI process has exited or is
        exiting (killed or crashed while idle, before the owner task noticed; read from ``/proc``)."""
        if self.known_closed:
            return True
        if self._alive_this_step:
            return False
        if process_exiting(self._pid):
            return True
        if running_loop() is self._loop:
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
        if self._transport is not None and self._transport.ended:
            return True
        return process_exited(self._pid)

    def _forget_alive(self) -> None:
        self._alive_this_step = False

    async def start(self, *, warm_up: bool = False) -> None:
        """Start the CLI process and wait until it is connected.

        ``warm_up`` (for a spare, started ahead of its conversation) then has the CLI assemble what its first
        request needs (system prompt, tool list, context accounting) without any API call, so that the first turn
        does not pay for it.
        """
        kill_at_exit(self, CLISession.kill)
        keep_api_error_fields()  # the typed errors of a failed turn read the API error type and code the CLI reports
        _quiet_deliberate_stops()
        if self._tag is not None:
            lifeline.watch(self._tag)  # before the process exists: no moment when a killed program would leave it
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
            with anyio.CancelScope(shield=True):  # an anyio deadline cancels every await: this one must run
                gone = await self._kill_spawning()
            if gone:
                # Nothing runs in the folders and files of this start any more: removed now, not only by the
                # background close, which never runs if the event loop closes right after the error.
                for server in self.tool_servers:
                    server.discard()
                self._closed_now()
            # The owner notices the killed CLI only when the SDK's start gives up (a second or two): the caller's
            # timeout or cancellation must not wait for that, the rest of the cleanup goes on in the background.
            cleanup = self._loop.create_task(self._close_given_up_start(), name="claude-code-session-close")
            self._background.add(cleanup)
            cleanup.add_done_callback(self._background.discard)
            raise

    async def _kill_spawning(self) -> bool:
        """Kill the CLI a given-up start is spawning right now, once it exists (the SDK's ``connect()`` spawns it
        after a few awaits), so that no CLI of a cancelled or timed-out request outlives its error. Whether no CLI
        of this start runs any more (none was spawned, or it is dying)."""
        deadline = self._loop.time() + _STOP_GRACE_SECONDS
        transport = self._transport
        while self._connecting and transport is not None and transport.process is None:
            if self._loop.time() > deadline:
                return False
            await asyncio.sleep(_SPAWN_POLL_SECONDS)
        process = transport.process if transport is not None and self._client is None else None
        self._kill_starting()
        # Killed: a large process takes a moment to die; the caller's error waits for that, not for the reaping.
        pid = process.pid if process is not None else None
        # Polled: the process's end has no event to wait for here (its owner's watcher reaps it later).
        while pid is not None and not (process_exited(pid) or process_exiting(pid)) and self._loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_SPAWN_POLL_SECONDS)
        if self._client is not None:
            return False  # connected after all: the background close stops it
        if pid is None:
            return transport is None or transport.process is None
        return process_exited(pid) or process_exiting(pid)

    async def _close_given_up_start(self) -> None:
        try:
            await self.close()
        finally:
            if self._ready.done() and not self._ready.cancelled():
                self._ready.exception()  # the start was given up: its late failure is known, not "never retrieved"

    def _kill_starting(self) -> None:
        """Kill the CLI process of a start that did not complete (timed out or cancelled), if it was spawned."""
        transport = self._transport
        if transport is None or self._client is not None:
            return
        process = transport.process
        if process is not None and process.returncode is None and not reaped(process.pid):
            signal_group(process.pid, force=True)
        transport.stopped(force=True)

    async def _own(self, *, warm_up: bool) -> None:
        _STOP_MARK.set(self._stop_mark)
        started = time.monotonic()
        gate = starting_slots()
        remove_resumed: Callable[[], Awaitable[None]] = _nothing_to_remove
        try:
            if gate.used >= gate.limit:
                logger.debug("waiting to start a CLI: %d are starting already", gate.used)
            await gate.acquire(_nothing_to_evict)
            try:
                if self._stop_mark.stopped:  # given up while it waited for the slot: no CLI is spawned for it
                    raise CLIInterruptedError("The Claude Code session was given up before its CLI started")
                self._connecting = True
                options, remove_resumed = await options_resumed_from_store(self.options)
                with sdk_advice_silenced(self.options.can_use_tool is not None):
                    transport = self._transport = self._transports.open(options)
                    transport.when_spawned(self._spawned)
                    client = ClaudeSDKClient(options, transport=transport)
                    await client.connect()
                    self._spawned()  # a CLI that is no process
            finally:
                self._connecting = False
                gate.release()
        except BaseException as error:
            self._end_processes(None)  # whatever of a failed start still runs; the lifeline forgets the tag
            with anyio.CancelScope(shield=True):
                await remove_resumed()
            if not self._ready.done():
                self._ready.set_exception(error)
                if self._stop_mark.stopped:
                    self._ready.exception()  # nobody waits for a start that was given up
            return
        self._process = transport.process
        self._pid = self._process.pid if self._process is not None else None
        self._client = client
        if self._stop_mark.stopped:
            self._signal(force=True)  # connected after its start was given up: nobody will use it
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
                self._signal(force=True)
            # A task of its own, shielded: a close that stops waiting for the owner cancels it here, and the
            # disconnect then ends within its own timeout, awaited by that close. Its outcome is always retrieved:
            # once the shield is cancelled nothing else would (a program paused between ``run_sync`` calls lets
            # the timeout expire meanwhile, and asyncio printed "Task exception was never retrieved").
            disconnect = self._disconnecting = self._loop.create_task(
                _disconnect(client), name="claude-code-disconnect"
            )
            disconnect.add_done_callback(_disconnected)
            try:
                await asyncio.shield(disconnect)
            except BaseException:
                self._stop_mark.stopped = True  # its message reader sees the SIGTERM: a deliberate stop
                stop_child(self._live_pid())
                raise
            finally:
                with anyio.CancelScope(shield=True):
                    await remove_resumed()
                if self._process is not None:
                    try:
                        await _ended_and_reported(self._process)
                    finally:
                        close_process_pipes(self._process)
                # The CLI is gone: the commands it left running (a background command, one that outlived it) go too.
                await self._stop_leftovers()

    async def _serve(self, client: ClaudeSDKClient, turn: _TurnRequest) -> None:
        async def one_message(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
            yield message

        self._serving = True
        self._current = turn
        try:
            if turn.message is not None:
                await client.query(one_message(turn.message))
            async for message in client.receive_response():
                if self.observer is not None:
                    self.observer(message)
                if isinstance(message, ResultMessage):
                    self.session_id = message.session_id
                    self.served_sessions.add(message.session_id)
                elif isinstance(message, SystemMessage) and isinstance(named := message.data.get("session_id"), str):
                    self.served_sessions.add(named)
                delivery = Delivery.WAKE if self._delivery is None else self._delivery(message)
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
            if self._on_failure is not None:
                self._on_failure(error)
        finally:
            self._serving = False
            self._current = None
            turn.output.put(None)

    def fail_turn(self, error: BaseException) -> bool:
        """End the turn in progress for its consumer with ``error`` (the CLI goes on until the turn is stopped);
        whether a turn was in progress."""
        if self._current is None:
            return False
        self._current.output.put(error)
        return True

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

    async def claim(self, claim: SessionClaim, *, signature: str, tool_servers: Sequence[ServedTools] = ()) -> None:
        """Bind this parked CLI (started with ``--await-claim``) to a session: its in-process servers, the allow
        rules of their tools, the ``claim_session`` request, then the model if it differs from the launch's. The
        session then has ``signature`` and stops ``tool_servers`` with its CLI.

        Raises :class:`ClaimRefusedError` when the CLI refuses or fails the claim, or is gone: it cannot be used.
        """
        client = self._client
        if client is None or self.closed or self.busy:
            raise ClaimRefusedError("the parked CLI is gone")
        try:
            for name, instance in claim.sdk_servers.items():
                add_sdk_mcp_server(client, name, instance)
            if (allow := claim.allow_request()) is not None:
                await send_control_request(client, allow, seconds=CLAIM_TIMEOUT)
            answer = await send_control_request(client, claim.request(), seconds=CLAIM_TIMEOUT)
            if claim.model is not None and claim.model != self.options.model:
                await client.set_model(claim.model)
        except Exception as error:
            raise ClaimRefusedError(str(error) or type(error).__name__) from error
        logger.debug("claimed a parked CLI (pid %s) after %s ms parked", self._pid, answer.get("parked_ms"))
        self.signature = signature
        self.tool_servers.extend(tool_servers)

    async def rewind(self) -> None:
        """Empty the conversation of this idle CLI (the ``rewind_conversation`` request, back to the message that
        opened it, :attr:`opening_uuid`), so that it serves a new conversation as a new CLI would, without the cost of
        a CLI's first turn. The session keeps its id; the transcript entries of the conversation are cut off (a
        resume at one of :attr:`conversation_points` fails).

        Raises :class:`RewindRefusedError` when the CLI refuses or fails the rewind, or is gone: it cannot be used.
        """
        client, target = self._client, self.opening_uuid
        if client is None or target is None or self.closed or self.busy:
            raise RewindRefusedError("the CLI holds no conversation it opened, or is gone")
        try:
            request = {"subtype": "rewind_conversation", "target_message_uuid": target}
            answer = await send_control_request(client, request, seconds=_REWIND_TIMEOUT_SECONDS)
        except Exception as error:
            raise RewindRefusedError(str(error) or type(error).__name__) from error
        if answer.get("rewound") is not True:
            raise RewindRefusedError(str(answer.get("error") or answer.get("reason") or answer))
        self.conversation_points = set()
        self.opening_uuid = None
        self.seen_digest = None
        logger.debug("rewound the conversation of CLI %s (session %s): it serves a new one", self._pid, self.session_id)

    async def say_during_turn(self, message: dict[str, Any]) -> None:
        """Send a user message while a turn runs: the CLI gives it to Claude with its next API request of the turn
        (after the tool results), as a message the user sent while Claude was working."""
        client = self._client
        if client is None or self.closed:
            raise CLIInterruptedError("The Claude Code session is closed")

        async def one_message() -> AsyncIterator[dict[str, Any]]:
            yield message

        await client.query(one_message())

    async def relist_tools(self, server_name: str) -> None:
        """Have the CLI list the tools of MCP server ``server_name`` again (it turns the server off and on), also
        during a turn: its next API request offers the tools listed now."""
        client = self._client
        if client is None or self.closed:
            raise CLIInterruptedError("The Claude Code session is closed")
        await client.toggle_mcp_server(server_name, False)
        await client.toggle_mcp_server(server_name, True)

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
                self._signal(force=False)
                owner.cancel()
            done, _ = await asyncio.wait({owner}, timeout=_STOP_GRACE_SECONDS)
            if not done:
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(owner), timeout=_STOP_GRACE_SECONDS)
        if (disconnect := self._disconnecting) is not None and not disconnect.done():
            # A cancelled owner no longer waits for it; it ends within its own timeout.
            await asyncio.wait({disconnect}, timeout=_STOP_GRACE_SECONDS * 2)
        self._stop_mark.stopped = True  # whatever still runs is stopped on purpose: its reader's error is no news
        stop_child(self._live_pid())
        await self._stop_leftovers()
        await self._stop_tool_servers()
        self._closed_now()

    def _closed_now(self) -> None:
        callbacks, self._on_closed = self._on_closed, []
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
        self._signal(force=at_once)
        for server in self.tool_servers:
            server.discard()
        cleanup = self._loop.create_task(self.close())
        self._background.add(cleanup)
        cleanup.add_done_callback(self._background.discard)
        await asyncio.shield(cleanup)

    def terminate(self, *, force: bool = False) -> None:
        """Send the CLI's processes SIGTERM (SIGKILL with ``force``), from any thread: its owner task notices once
        its event loop runs again (what the pools' clock does to an idle session of a loop that does not run)."""
        if not process_exited(self._pid):
            self._stop_mark.stopped = True
            self._signal(force=force)

    def kill(self) -> None:
        """Synchronous last resort, for sessions whose event loop is gone (or still connecting)."""
        stop_child(self._live_pid())
        self._end_processes(None)
        for server in self.tool_servers:
            server.discard()
        self._closed_now()

    def _live_pid(self) -> int | None:
        """The CLI's pid while it is this process's unreaped child (then it, and its group id, are still ours)."""
        process = self._process
        if process is None and self._transport is not None:
            process = self._transport.process
        if process is None or process.returncode is not None or reaped(process.pid):
            return None
        return process.pid

    def _signal(self, *, force: bool) -> None:
        """SIGTERM (SIGKILL with ``force``) to the CLI's process group and every process carrying its tag."""
        pid = self._live_pid()
        if pid is not None:
            signal_group(pid, force=force)
        if self._transport is not None:
            self._transport.stopped(force=force)
        if self._tag is not None:
            signal_tagged([self._tag], force=force)

    async def _stop_leftovers(self) -> None:
        """Once the CLI is gone: SIGTERM to whatever still carries its tag, and if anything did, SIGKILL to what is
        left after a grace period (waited for in a thread)."""
        if self._processes_ended:
            return
        if self._tag is None or not signal_tagged([self._tag]):
            self._processes_ended = True  # nothing was left
            self._release()
            return
        try:
            await asyncio.shield(asyncio.to_thread(self._end_processes, _COMMANDS_GRACE_SECONDS))
        except RuntimeError:  # no new thread at interpreter exit: no grace either
            self._end_processes(None)

    def _release(self) -> None:
        if self._tag is not None:
            lifeline.release(self._tag)

    def _end_processes(self, grace: float | None) -> None:
        """Stop whatever still carries the CLI's tag (SIGTERM, SIGKILL after ``grace`` seconds; at once with
        ``None``), then let the lifeline forget it. Run once the CLI is gone (blocking: in a thread on a loop)."""
        if self._processes_ended:
            return
        self._processes_ended = True
        if self._tag is None:
            return
        stopped = stop_tagged([self._tag], grace=grace)
        if stopped:
            logger.debug("stopped %d process(es) the CLI (pid %s) left running", stopped, self._pid)
        self._release()


async def _ended_and_reported(process: Process) -> None:
    """Kill ``process`` if it still runs, then wait until asyncio's child watcher has reported its exit (at most
    :data:`_EXIT_REPORT_SECONDS`). Its pipes are closed after that: closing them polls (and may kill) a process with
    no exit code yet, and a poll that reaps it first leaves the watcher's own wait with nothing to wait for, which
    then prints "Unknown child process pid N, will report returncode 255" (CPython's threaded child watcher)."""
    if process.returncode is None and not (process_exited(process.pid) or process_exiting(process.pid)):
        signal_process(process.pid, force=True)  # our own signal: the process's kill() would poll it
    deadline = time.monotonic() + _EXIT_REPORT_SECONDS
    while process.returncode is None and time.monotonic() < deadline:  # noqa: ASYNC110  # a report has no event
        await asyncio.sleep(_SPAWN_POLL_SECONDS)


async def _disconnect(client: ClaudeSDKClient) -> None:
    await asyncio.wait_for(client.disconnect(), timeout=_STOP_GRACE_SECONDS * 2)


def _disconnected(task: asyncio.Task[None]) -> None:
    """Retrieve a disconnect's outcome: a failed one is followed by SIGTERM to the CLI, which its owner or
    :meth:`CLISession.close` sends."""
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.debug("disconnecting from the CLI failed (%r); its process is stopped", error)


_SUBPROCESSES = SubprocessTransports()


async def _nothing_to_remove() -> None:
    return None


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
