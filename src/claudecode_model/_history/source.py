"""Where a turn's conversation comes from: a live session, a session's transcript (resumed or branched), a replay.

A run must see exactly its message history. A live CLI process is continued only when what it has seen is exactly
that history, and only by one run at a time. Otherwise the transcript of the session the history came from is
resumed when it ends where the history ends and no process of this model uses it, and branched (forked at the
history's last message) when it has grown since or is in use. A history no transcript holds whole (every entry
from its start to the history's end) is replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from claudecode_model._history.plan import SessionPoint, TurnPlan
from claudecode_model._history.replay import TranscriptEntry
from claudecode_model._history.transcripts import PointPosition

__all__ = [
    "ForkSession",
    "FreshSession",
    "LiveSession",
    "ReplayHistory",
    "ResumeSession",
    "SessionSource",
    "Transcripts",
    "choose_source",
]

S = TypeVar("S")


class Transcripts(Protocol):
    """Where session transcripts are kept (the CLI's files:
    :class:`~claudecode_model._history.transcripts.TranscriptFiles`)."""

    def position(self, session_id: str, message_uuid: str) -> PointPosition:
        """Where the entry ``message_uuid`` lies in the transcript of ``session_id``."""
        ...


@dataclass(frozen=True)
class LiveSession(Generic[S]):
    """A kept CLI process that has seen exactly the history: the turn goes on in it."""

    session: S


@dataclass(frozen=True)
class ResumeSession:
    """A transcript that ends where the history ends and that no process uses: ``--resume`` it."""

    session_id: str


@dataclass(frozen=True)
class ForkSession:
    """A transcript that holds the history and more, or is in use: a new session cut at ``message_uuid``."""

    session_id: str
    message_uuid: str


@dataclass(frozen=True)
class ReplayHistory:
    """No transcript holds the history: write it as a new session's transcript and resume that."""

    entries: list[TranscriptEntry]


@dataclass(frozen=True)
class FreshSession:
    """No history: a new session."""


SessionSource = LiveSession[S] | ResumeSession | ForkSession | ReplayHistory | FreshSession


def choose_source(
    plan: TurnPlan,
    *,
    take_live: Callable[[SessionPoint], S | None],
    in_use: Callable[[str], bool],
    files: Transcripts,
    was_cut: Callable[[str, str], bool] = lambda session_id, entry: False,
) -> SessionSource[S]:
    """Where the turn of ``plan`` goes on from.

    ``take_live`` claims a kept process that has seen exactly the history of the point (or returns None);
    ``in_use`` tells whether a process of this model uses a session id; ``was_cut`` whether a rewind here cut an
    entry off a session's transcript (``files`` may have been read before the cut).
    """
    point = plan.point
    if point is not None:
        live = take_live(point)
        if live is not None:
            return LiveSession(live)
        position = files.position(point.session_id, point.message_uuid)
        if was_cut(point.session_id, point.message_uuid):
            position = "missing"
        match position:
            case "end" if not in_use(point.session_id):
                return ResumeSession(point.session_id)
            case "end" | "inside":
                return ForkSession(point.session_id, point.message_uuid)
            case "broken" | "missing":
                pass
    if not plan.history:
        return FreshSession()
    entries = plan.replay()
    return ReplayHistory(entries) if entries else FreshSession()
