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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from claudecode_model._replay import transcript_path

logger = logging.getLogger(__name__)

PointPosition = Literal["end", "inside", "missing"]
"""Where a message lies in a transcript: its last conversation message, followed by more, or not in it at all."""

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
        found = False
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            if found and entry.get("type") in _CONVERSATION_TYPES:
                return "inside"
            if entry.get("uuid") == message_uuid:
                found = True
        return "end" if found else "missing"


def remove_transcript(path: Path) -> None:
    """Remove a session transcript and the session's folder beside it (best effort: failures are logged)."""
    try:
        path.unlink(missing_ok=True)
        folder = path.with_suffix("")
        if folder.is_dir():
            shutil.rmtree(folder)
    except OSError as error:
        logger.warning("could not remove the session transcript %s: %s", path, error)
