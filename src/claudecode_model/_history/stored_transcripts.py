"""Session transcripts kept in a session store, for a turn whose session is not (whole) on this machine's disk.

The turn runner decides between resuming a session, branching it and replaying the history from where the history's
last message lies in the session's transcript (:mod:`claudecode_model._history.source`). Without a store the CLI's own
files answer that; with one, :func:`find_transcript` looks at both copies, the store's (another worker's sessions, and
what the SDK would resume) and this machine's, and goes on from one that holds the history whole: every entry from the
start to the history's end (a store write that failed leaves a gap). :func:`mirror_transcript` puts a transcript written
here (a replayed history, which the CLI does not mirror: it mirrors only what it writes) into the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from claude_agent_sdk import project_key_for_directory
from claude_agent_sdk.types import SessionKey

from claudecode_model._history.plan import SessionPoint
from claudecode_model._history.store import GuardedStore
from claudecode_model._history.transcripts import PointPosition, TranscriptFiles, entries_position

__all__ = ["SessionCopy", "find_transcript", "mirror_transcript", "read_entries", "recorded_entries_up_to", "store_key"]

logger = logging.getLogger(__name__)

_WHOLE: frozenset[PointPosition] = frozenset({"end", "inside"})


@dataclass(frozen=True)
class SessionCopy:
    """The copy of the history's session a turn goes on from (the CLI's files answer for other sessions)."""

    files: TranscriptFiles
    session_id: str
    entries: list[Any]
    origin: Literal["store", "disk"]

    def position(self, session_id: str, message_uuid: str) -> PointPosition:
        """Where ``message_uuid`` lies in this copy (in the CLI's files for another session)."""
        if session_id != self.session_id:
            return self.files.position(session_id, message_uuid)
        return entries_position(self.entries, message_uuid)


def store_key(files: TranscriptFiles, session_id: str) -> SessionKey:
    """The store key of a session of this working directory (the project key the SDK uses)."""
    directory = str(files.cwd) if files.cwd is not None else os.getcwd()
    return {"project_key": project_key_for_directory(directory), "session_id": session_id}


async def find_transcript(
    files: TranscriptFiles, store: GuardedStore | None, point: SessionPoint | None
) -> TranscriptFiles | SessionCopy:
    """Where to look for the transcript of ``point``'s session: the CLI's files without a store; with one, the
    store's copy if it holds the history whole, else this machine's if that does (and the store is given what it
    lacks of it). The SDK resumes the copy chosen: stage it (:meth:`GuardedStore.staged`)."""
    if store is None or point is None:
        return files
    key = store_key(files, point.session_id)
    stored = await store.load_checked(key) or []
    stored_at = entries_position(stored, point.message_uuid)
    if stored_at in _WHOLE:
        return SessionCopy(files, point.session_id, list(stored), "store")
    local = await asyncio.to_thread(read_entries, files, point.session_id)
    local_at = entries_position(local, point.message_uuid)
    if local_at in _WHOLE:
        if stored_at == "broken":
            logger.warning(
                "session store: the stored transcript of session %s lacks entries before the history's end (a write "
                "failed); the turn goes on from this machine's copy, which is written into the store",
                point.session_id,
            )
        await _repair(store, key, stored, local)
        return SessionCopy(files, point.session_id, local, "disk")
    if "broken" in (stored_at, local_at):
        logger.warning(
            "session store: the transcript of session %s lacks entries before the history's end (a store write "
            "failed); the history is replayed into a new session",
            point.session_id,
        )
    logger.debug("session %s holds the history neither in the session store nor on this machine", point.session_id)
    return SessionCopy(files, point.session_id, list(stored) or local, "store" if stored else "disk")


async def _repair(store: GuardedStore, key: SessionKey, stored: list[Any], local: list[Any]) -> None:
    """Write the entries of this machine's copy the stored copy lacks (a store that fails keeps them unsent)."""
    present = {entry.get("uuid") for entry in stored if isinstance(entry, dict)}
    missing = [entry for entry in local if isinstance(entry.get("uuid"), str) and entry["uuid"] not in present]
    if not missing:
        return
    try:
        await store.append(key, missing)
    except Exception as error:
        logger.warning(
            "session store: %d entries of session %s could not be written into it (%s: %s); they are sent again with "
            "the session's next write",
            len(missing),
            key["session_id"],
            type(error).__name__,
            error,
        )


async def recorded_entries_up_to(
    files: TranscriptFiles, store: GuardedStore, point: SessionPoint
) -> list[dict[str, Any]] | None:
    """The records of ``point``'s session transcript up to and including the entry ``point.message_uuid``: from
    this machine's disk when it has them whole, else from the store; ``None`` when neither holds that entry with
    every entry before it (a turn cut off before the CLI wrote it, a store write that failed, a store that cannot
    be read)."""
    on_disk = await asyncio.to_thread(read_entries, files, point.session_id)
    found = _whole_up_to(on_disk, point.message_uuid)
    if found is None:
        stored = await store.load_checked(store_key(files, point.session_id))
        found = _whole_up_to(stored or [], point.message_uuid)
    if found is None:
        logger.debug("no whole record of entry %s of session %s", point.message_uuid, point.session_id)
    return found


def _whole_up_to(entries: Sequence[Any], message_uuid: str) -> list[dict[str, Any]] | None:
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("uuid") == message_uuid:
            records = [dict(record) for record in entries[: index + 1] if isinstance(record, dict)]
            return records if entries_position(records, message_uuid) in _WHOLE else None
    return None


async def mirror_transcript(store: GuardedStore, files: TranscriptFiles, session_id: str) -> list[Any]:
    """Copy the transcript of ``session_id`` written here into the store; the entries copied.

    A store that fails keeps them to be sent again with the session's next write (logged, not raised).
    """
    entries = await asyncio.to_thread(read_entries, files, session_id)
    if entries:
        try:
            await store.append(store_key(files, session_id), entries)
        except Exception as error:
            logger.warning(
                "session store: the replayed transcript of session %s could not be copied into it (%s: %s); it is "
                "sent again with the session's next write",
                session_id,
                type(error).__name__,
                error,
            )
    return entries


def read_entries(files: TranscriptFiles, session_id: str) -> list[Any]:
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
