"""The seam under a CLI session: how it reaches its CLI.

A :class:`~claudecode_model._sessions.session.CLISession` drives its CLI through claude-agent-sdk's
``ClaudeSDKClient``, which takes any SDK ``Transport`` (connect, write, a message stream, end of input, close). A
:class:`CLITransports` opens one :class:`CLITransport` per session. The real one, :class:`SubprocessTransports`,
starts the Claude Code CLI in a session of its own (or adopts the one a new process started early, see
:mod:`claudecode_model._sessions.early_cli`), ties it to the lifeline (:mod:`claudecode_model._process.lifeline`)
the moment it exists, and leaves the stream-json protocol to the SDK's subprocess transport.
The in-memory one (``claudecode_model.testing.ScriptedCLI``) plays scripted messages, so the session, pool and turn
logic can be tested without a process.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import Process
from claude_agent_sdk import ClaudeAgentOptions, CLIConnectionError, Transport

from claudecode_model._compat import process_stdin_fd, subprocess_transport, transport_process
from claudecode_model._process import lifeline
from claudecode_model._process.oscalls import CLI_TAG_VARIABLE, own_session_options
from claudecode_model._sessions.early_cli import adopt_early_cli
from claudecode_model._sessions.options import INLINE_OUTPUT_SCHEMA_CHARACTERS

__all__ = ["CLITransport", "CLITransports", "SubprocessTransports"]

logger = logging.getLogger(__name__)


class CLITransport(Transport):
    """An SDK ``Transport`` to one CLI, and what the session needs to stop it."""

    @property
    @abstractmethod
    def process(self) -> Process | None:
        """The CLI process once started (``None`` before, and for a CLI that is no process): the session signals
        its group, waits for it and reaps it."""

    @abstractmethod
    def stopped(self, *, force: bool) -> None:
        """The session sent the CLI SIGTERM (SIGKILL with ``force``), maybe from another thread: a CLI that is no
        process ends as if killed."""

    @property
    def ended(self) -> bool:
        """Whether a CLI that is no process has ended (a process's end is read from the operating system)."""
        return False

    def when_spawned(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` during ``connect()``, once the CLI's process exists (a CLI that is no process: never;
        its session counts it spawned once connected)."""
        return None


class CLITransports:
    """Opens the transport of each new CLI session (for the options it starts with)."""

    @abstractmethod
    def open(self, options: ClaudeAgentOptions) -> CLITransport:
        """A transport for a CLI started with ``options`` (not connected yet)."""


class SubprocessTransports(CLITransports):
    """The Claude Code CLI as a child process, each in a session of its own."""

    def open(self, options: ClaudeAgentOptions) -> CLITransport:
        return _SubprocessTransport(options)


class _SubprocessTransport(CLITransport):
    def __init__(self, options: ClaudeAgentOptions) -> None:
        self._sdk = subprocess_transport(options, self._spawn, inline_schema_limit=INLINE_OUTPUT_SCHEMA_CHARACTERS)
        self._tag = options.env.get(CLI_TAG_VARIABLE) if isinstance(options.env, dict) else None
        """The tag the session registered with the lifeline (see ``CLISession.start()``)."""
        self._spawned: Callable[[], None] | None = None
        self._stopped = False
        """The session sent the CLI a signal: it ends, on purpose."""

    @property
    def process(self) -> Process | None:
        return transport_process(self._sdk)

    def stopped(self, *, force: bool) -> None:
        self._stopped = True  # the signal reached the process

    def when_spawned(self, callback: Callable[[], None]) -> None:
        self._spawned = callback

    async def connect(self) -> None:
        await self._sdk.connect()

    async def write(self, data: str) -> None:
        try:
            await self._sdk.write(data)
        except CLIConnectionError as error:
            if not self._stopped:
                raise
            # Nothing reads it any more. The SDK answers the requests the CLI sent before it was stopped (those of
            # a spare stopped while its paused loop let nothing read them, say) in tasks nobody awaits: a write
            # that raised there would be reported as "Task exception was never retrieved".
            logger.debug("a write to a CLI stopped on purpose was dropped (%s)", error)

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._sdk.read_messages()

    async def close(self) -> None:
        self._input_ends()
        await self._sdk.close()

    def is_ready(self) -> bool:
        return self._sdk.is_ready()

    async def end_input(self) -> None:
        self._input_ends()
        await self._sdk.end_input()

    def _input_ends(self) -> None:
        if self._tag is not None:
            lifeline.input_ended(self._tag)  # before the SDK closes its copy: the CLI gets the end of input

    async def _spawn(self, command: Sequence[str], keywords: Mapping[str, Any]) -> Process:
        """Start the CLI as the SDK asks, in a session of its own (or adopt the CLI started early with exactly
        these), and tie it to this program at once: no moment of its start escapes the lifeline."""
        process = adopt_early_cli(command, keywords)
        if process is None:
            process = await anyio.open_process(list(command), **keywords, **own_session_options())
        if self._tag is not None:
            lifeline.started(self._tag, process.pid, process_stdin_fd(process) if lifeline.HOLDS_INPUT else None)
        if self._spawned is not None:
            self._spawned()
        return process
