"""What every turn of a model runs with (:class:`TurnRunner`), and what a new CLI process of a turn is started
from (:class:`SessionRequest`).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

from claudecode_model._history.ledger import PROCESS_LEDGER, SessionLedger
from claudecode_model._history.store import GuardedStore
from claudecode_model._process.slots import ProcessSlots
from claudecode_model._sessions.options import BuiltOptions, RequestNeeds
from claudecode_model._sessions.pool import SessionPool
from claudecode_model._sessions.session import CLISession
from claudecode_model._sessions.transport import CLITransports
from claudecode_model._tools.request import ToolServerPlan, ToolSetup
from claudecode_model._turns.parking_lot import ParkingLot

__all__ = ["STDERR_LINES", "LaunchMemory", "SessionRequest", "TurnRunner", "nothing"]


STDERR_LINES = 50
"""How many of the CLI's last stderr lines an error reports."""


class LaunchMemory:
    """The signatures of a model's recent new conversations, by launch signature: a launch signature seen with two
    signatures is *varied*, and a parked spare serves it better than a ready spare of one signature."""

    SIZE = 16

    def __init__(self) -> None:
        self._last: dict[str, str] = {}
        self._varied: set[str] = set()
        self._allowed: dict[str, set[str]] = {}

    def note(self, launch_signature: str, signature: str, allowed: Sequence[str] = ()) -> bool:
        """Remember a new conversation and the allow rules of its in-process servers; whether its launch signature
        is varied."""
        last = self._last.pop(launch_signature, None)
        self._last[launch_signature] = signature  # the most recent last
        self._allowed.setdefault(launch_signature, set()).update(allowed)
        if last is not None and last != signature:
            self._varied.add(launch_signature)
        while len(self._last) > self.SIZE:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._varied.discard(oldest)
            self._allowed.pop(oldest, None)
        return launch_signature in self._varied

    def allowed(self, launch_signature: str) -> list[str]:
        """The allow rules of the in-process servers of the conversations noted with this launch signature (a
        parked CLI launched with them needs none at its claim)."""
        return sorted(self._allowed.get(launch_signature, ()))


@dataclass(frozen=True)
class TurnRunner:
    """What every turn of one model needs: its CLI, environment, tools and the pool of kept sessions."""

    model_name: str | None
    """The model the CLI is asked for (``None``: the CLI's default)."""
    display_name: str
    """The model name errors and responses report."""
    cli_path: Path
    env: Mapping[str, str]
    tools: ToolSetup
    pool: SessionPool[CLISession]
    ledger: SessionLedger = PROCESS_LEDGER
    """The sessions in use (by any model of the process), and the transcripts to remove once unused."""
    session_store: GuardedStore | None = None
    """Where the CLI mirrors session transcripts, and where the transcript of another worker's session is found."""
    slots: ProcessSlots | None = None
    """The model's bound on live CLI processes (``None``: unbounded)."""
    built_options: BuiltOptions = field(default_factory=BuiltOptions)
    """The options of recent requests, reused for requests with the same inputs."""
    parked: ParkingLot[Any] | None = None  # of CLITurn, a module above this one
    """The model's turns waiting for tool results: a request that waits too long for a process slot closes the
    oldest of them (see :data:`PARKED_SLOT_GRACE`)."""
    cli_transports: CLITransports | None = None
    """How the sessions reach their CLI (``None``: a child process each)."""
    launches: LaunchMemory = field(default_factory=LaunchMemory)
    """Which launch signatures the model's new conversations have shared between signatures."""

    def __post_init__(self) -> None:
        _RUNNERS[id(self)] = self

    def neighbours(self) -> list[TurnRunner]:
        """The other models' runners of the program whose parked spares can serve this one's sessions: the same
        CLI, transports and session store (the launch signature compares the rest, the model included)."""
        return [
            other
            for other in list(_RUNNERS.values())
            if other is not self
            and other.cli_path == self.cli_path
            and other.cli_transports is self.cli_transports
            and other.session_store is self.session_store
        ]


_RUNNERS: weakref.WeakValueDictionary[int, TurnRunner] = weakref.WeakValueDictionary()
"""Every live model's runner, by identity."""


@dataclass(frozen=True)
class SessionRequest:
    """Everything a new CLI process of a turn is started from (also what a spare for it is started from)."""

    runner: TurnRunner
    options: ClaudeAgentOptions
    signature: str
    servers: Sequence[ToolServerPlan]
    needs: RequestNeeds
    launch_signature: str | None = None
    """What a parked CLI that can be claimed for this session was launched with (``None``: none can)."""


def nothing() -> None:
    """A callback that does nothing."""
    return None
