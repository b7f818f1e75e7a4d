"""Session transcripts kept in a session store, for a turn whose session is not on this machine's disk.

The turn runner decides between resuming a session, branching it and replaying the history from where the history's
last message lies in the session's transcript (:mod:`claudecode_model._source`). The CLI's own files answer that for
sessions this machine wrote; :func:`transcripts_with_store` adds the session store for the others (another worker's
sessions), loading the one transcript the turn needs. :func:`mirror_transcript` puts a transcript written here (a
replayed history, which the CLI does not mirror: it mirrors only what it writes) into the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import project_key_for_directory
from claude_agent_sdk.types import SessionKey, SessionStore

from claudecode_model._plan import SessionPoint
from claudecode_model._transcripts import PointPosition, TranscriptFiles, entries_position

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredTranscript:
    """The CLI's files, and one session's transcript loaded from the store (for when the disk has none)."""

    files: TranscriptFiles
    session_id: str
    entries: Sequence[Any]

    def position(self, session_id: str, message_uuid: str) -> PointPosition:
        """Where ``message_uuid`` lies: on disk if the disk has the session, else in the stored transcript."""
        on_disk = self.files.position(session_id, message_uuid)
        if on_disk != "missing" or session_id != self.session_id:
            return on_disk
        return entries_position(self.entries, message_uuid)


def store_key(files: TranscriptFiles, session_id: str) -> SessionKey:
    """The store key of a session of this working directory (the project key the SDK uses)."""
    directory = str(files.cwd) if files.cwd is not None else os.getcwd()
    return {"project_key": project_key_for_directory(directory), "session_id": session_id}


async def transcripts_with_store(
    files: TranscriptFiles, store: SessionStore | None, point: SessionPoint | None
) -> TranscriptFiles | StoredTranscript:
    """Where to look for the transcript of ``point``'s session: the disk, and the store when the disk has none."""
    if store is None or point is None or files.path(point.session_id).exists():
        return files
    entries = await store.load(store_key(files, point.session_id))
    if not entries:
        logger.debug("session %s is neither on this machine nor in the session store", point.session_id)
        return files
    return StoredTranscript(files, point.session_id, entries)


async def recorded_entries_up_to(
    files: TranscriptFiles, store: SessionStore, point: SessionPoint
) -> list[dict[str, Any]] | None:
    """The records of ``point``'s session transcript up to and including the entry ``point.message_uuid``: from
    this machine's disk when it has them, else from the store; ``None`` when neither holds that entry (a turn cut
    off before the CLI wrote it)."""
    on_disk = await asyncio.to_thread(_read_entries, files, point.session_id)
    found = _up_to(on_disk, point.message_uuid)
    if found is None:
        found = _up_to(await store.load(store_key(files, point.session_id)) or [], point.message_uuid)
    if found is None:
        logger.debug("no record of entry %s of session %s", point.message_uuid, point.session_id)
    return found


def _up_to(entries: Sequence[Any], message_uuid: str) -> list[dict[str, Any]] | None:
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("uuid") == message_uuid:
            return [dict(record) for record in entries[: index + 1] if isinstance(record, dict)]
    return None


async def mirror_transcript(store: SessionStore, files: TranscriptFiles, session_id: str) -> None:
    """Copy the transcript of ``session_id`` written here into the store."""
    entries = await asyncio.to_thread(_read_entries, files, session_id)
    if entries:
        await store.append(store_key(files, session_id), entries)


def _read_entries(files: TranscriptFiles, session_id: str) -> list[Any]:
    try:
        text = files.path(session_id).read_text(encoding="utf-8")
    except OSError:
        return []
    entries: list[Any] = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short: the entries before it still count
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
