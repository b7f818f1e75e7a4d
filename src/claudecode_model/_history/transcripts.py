"""The CLI's session transcripts on disk: where a point of a history lies in one, and removing the ones we made.

The CLI keeps each session as JSONL under ``<CLAUDE_CONFIG_DIR>/projects/<sanitised cwd>/<session id>.jsonl`` (and
may keep a folder of the same name beside it, for large tool results and subagents). Every conversation message is
one entry with a ``uuid``; other entries (attachments, bookkeeping) have other types.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from claudecode_model._history.replay import transcript_path

__all__ = ["PointPosition", "TranscriptFiles", "entries_position", "remove_transcript"]

logger = logging.getLogger(__name__)

PointPosition = Literal["end", "inside", "broken", "missing"]
"""Where a message lies in a transcript: its last conversation message, followed by more, in it but with entries
before it missing (the chain of parent links from it to the start is broken), or not in it at all (also: cut off by
a rewind of the conversation, which the CLI no longer resumes at)."""

_CONVERSATION_TYPES = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class TranscriptFiles:
    """The session transcripts of one CLI environment (config dir) and working directory."""

    env: Mapping[str, str]
    cwd: str | os.PathLike[str] | None

    def path(self, session_id: str) -> Path:
        """Where the CLI keeps (or looks for) the transcript of ``session_id``."""
        return transcript_path(session_id, env=self.env, cwd=self.cwd)

    def position(self, session_id: str, message_uuid: str) -> PointPosition:
        """Where the entry ``message_uuid`` lies in the transcript of ``session_id``."""
        try:
            text = self.path(session_id).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return "missing"
        return entries_position(_json_lines(text), message_uuid)


def entries_position(entries: Sequence[Any], message_uuid: str) -> PointPosition:
    """Where the entry ``message_uuid`` lies among transcript entries (the same reading as the CLI's files).

    A transcript the CLI resumes is the chain of ``parentUuid`` links from the entry back to the first one (or to a
    compaction boundary, whose ``parentUuid`` is null): if an entry of that chain is absent (a write of the
    transcript failed), the point is ``"broken"``. A rewind of the conversation (the CLI's ``rewind_conversation``)
    cuts it at a user message, the ``cutUuid`` of the row it writes: the CLI finds no entry whose chain holds that
    message any more, so such a point is ``"missing"``.
    """
    found = False
    after = False
    parents: dict[str, Any] = {}
    cut: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            parents[uuid] = entry.get("parentUuid")
        if isinstance(cut_at := entry.get("cutUuid"), str):
            cut.add(cut_at)
        if found and entry.get("type") in _CONVERSATION_TYPES:
            after = True
        if uuid == message_uuid:
            found = True
    if not found:
        return "missing"
    chain = _chain(parents, message_uuid)
    if chain is None:
        return "broken"
    if not cut.isdisjoint(chain):
        return "missing"
    return "inside" if after else "end"


def _chain(parents: Mapping[str, Any], message_uuid: str) -> set[str] | None:
    """The entries on the ``parentUuid`` chain from ``message_uuid`` to the start; ``None`` if one is absent."""
    seen: set[str] = set()
    current: Any = message_uuid
    while isinstance(current, str):
        if current in seen:
            return None  # a cycle: not a transcript the CLI wrote
        seen.add(current)
        if current not in parents:
            return None
        current = parents[current]
    return seen if current is None else None


def _json_lines(text: str) -> list[Any]:
    """The JSON values of a JSONL text's lines (lines that are not JSON are skipped)."""
    values: list[Any] = []
    for line in text.splitlines():
        try:
            values.append(json.loads(line))
        except ValueError:
            continue
    return values


def remove_transcript(path: Path) -> None:
    """Remove a session transcript and the session's folder beside it (best effort: failures are logged)."""
    try:
        path.unlink(missing_ok=True)
        folder = path.with_suffix("")
        if folder.is_dir():
            shutil.rmtree(folder)
    except OSError as error:
        logger.warning("could not remove the session transcript %s: %s", path, error)
