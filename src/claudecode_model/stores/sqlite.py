"""A Claude Code ``SessionStore`` in one SQLite file: transcripts shared by the worker processes of one machine.

It needs nothing beyond Python's own ``sqlite3``. Every process that opens the same file sees the same sessions,
whatever its ``CLAUDE_CONFIG_DIR``; for workers on several machines use
:class:`~claudecode_model.stores.PostgresSessionStore`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from claudecode_model.stores._common import (
    MAIN_SUBPATH,
    StoredKey,
    checked_prefix,
    decode_entry,
    encode_entry,
    entry_uuid,
    folded_summary,
    summary_entry,
)

__all__ = ["SQLiteSessionStore"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_BUSY_TIMEOUT_MS = 30_000


class SQLiteSessionStore(SessionStore):
    """Session transcripts in a SQLite database file (WAL mode, safe for several processes at once).

    The same layout as :class:`~claudecode_model.stores.PostgresSessionStore`: one row per entry (entries with a
    ``uuid`` stored once), one row per transcript with its write time and the SDK's incremental summary. Database
    calls run in a worker thread so they never block the event loop. Close with :meth:`close` / :meth:`aclose`.
    A database file the store creates is readable by its owner only (0600), and so are its WAL and SHM files.
    """

    def __init__(self, path: str | os.PathLike[str], *, table_prefix: str = "claude_code_") -> None:
        """Open (and create if needed) the database file at ``path``; its directory must exist."""
        if not isinstance(path, str | os.PathLike) or not str(path):
            raise ValueError(f"path must name a SQLite database file, not {path!r}")
        location = Path(path)
        if not location.parent.is_dir():
            raise ValueError(f"path {str(location)!r}: the directory {str(location.parent)!r} does not exist")
        if location.is_dir():
            raise ValueError(f"path {str(location)!r} is a directory, not a database file")
        prefix = checked_prefix(table_prefix)
        self._path = location
        self._sessions = f'"{prefix}sessions"'
        self._entries = f'"{prefix}entries"'
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None
        """The device and inode of the file the connection opened (a file deleted or replaced since is noticed)."""
        self._prefix = prefix

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self._path)!r})"

    # --- the SessionStore protocol ---------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store ``entries`` after those appended before (entries whose ``uuid`` is already there are skipped)."""
        stored = StoredKey.of(key)
        if not entries:
            return
        rows = [(*_columns(stored), entry_uuid(entry), encode_entry(entry)) for entry in entries]

        def write(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")  # the write lock first: the summary fold reads what it then replaces
            try:
                db.execute(
                    f"INSERT INTO {self._sessions} (project_key, session_id, subpath, mtime) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (project_key, session_id, subpath)"
                    " DO UPDATE SET mtime = MAX(excluded.mtime, mtime + 1)",
                    (*_columns(stored), int(time.time() * 1000)),
                )
                db.executemany(
                    f"INSERT OR IGNORE INTO {self._entries} (project_key, session_id, subpath, uuid, entry)"
                    " VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                if stored.is_main:
                    (previous,) = db.execute(
                        f"SELECT summary FROM {self._sessions}"
                        " WHERE project_key = ? AND session_id = ? AND subpath = ?",
                        _columns(stored),
                    ).fetchone()
                    db.execute(
                        f"UPDATE {self._sessions} SET summary = ?"
                        " WHERE project_key = ? AND session_id = ? AND subpath = ?",
                        (folded_summary(previous, stored, entries), *_columns(stored)),
                    )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        await self._run(write)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of the transcript in append order, or ``None`` for a transcript never written."""
        stored = StoredKey.of(key)
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT entry FROM {self._entries} WHERE project_key = ? AND session_id = ? AND subpath = ?"
                " ORDER BY seq",
                _columns(stored),
            ).fetchall()
        )
        if not rows:
            return None
        return [decode_entry(text) for (text,) in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main transcripts of ``project_key`` with their last write time (epoch milliseconds)."""
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT session_id, mtime FROM {self._sessions} WHERE project_key = ? AND subpath = ?",
                (project_key, MAIN_SUBPATH),
            ).fetchall()
        )
        return [{"session_id": session_id, "mtime": int(mtime)} for session_id, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The SDK's summaries of the main transcripts of ``project_key``, stamped with their write time."""
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT session_id, mtime, summary FROM {self._sessions}"
                " WHERE project_key = ? AND subpath = ? AND summary IS NOT NULL",
                (project_key, MAIN_SUBPATH),
            ).fetchall()
        )
        return [summary_entry(session_id, mtime, data) for session_id, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; deleting a main transcript deletes its subagent transcripts too."""
        stored = StoredKey.of(key)
        if stored.is_main:
            condition = "project_key = ? AND session_id = ?"
            params: tuple[str, ...] = (stored.project_key, stored.session_id)
        else:
            condition = "project_key = ? AND session_id = ? AND subpath = ?"
            params = _columns(stored)

        def remove(db: sqlite3.Connection) -> None:
            with db:
                db.execute(f"DELETE FROM {self._sessions} WHERE {condition}", params)
                db.execute(f"DELETE FROM {self._entries} WHERE {condition}", params)

        await self._run(remove)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths (subagent transcripts) stored under a session."""
        stored = StoredKey.of(key)
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT subpath FROM {self._sessions} WHERE project_key = ? AND session_id = ? AND subpath <> ?"
                " ORDER BY subpath",
                (stored.project_key, stored.session_id, MAIN_SUBPATH),
            ).fetchall()
        )
        return [subpath for (subpath,) in rows]

    # --- set-up and tear-down --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connection (a later call opens it again)."""
        with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.close()

    async def aclose(self) -> None:
        """Close the database connection."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> SQLiteSessionStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- internals -------------------------------------------------------------------------------------------

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return await asyncio.to_thread(self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            if self._db is not None and self._file != _identity(self._path):
                # Writes would go on into a file no other process sees (an unlinked one) and be lost with it.
                self._db.close()
                self._db = None
                logger.warning("%r: the database file was deleted or replaced while in use", self)
                raise FileNotFoundError(
                    f"{self!r}: the database file was deleted or replaced while in use; the next call opens it anew "
                    "(the sessions stored before are not in it)"
                )
            if self._db is None:
                self._db = self._open()
                self._file = _identity(self._path)
            return work(self._db)

    def _open(self) -> sqlite3.Connection:
        _create_private(self._path)
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            _use_wal(db)
            db.execute("PRAGMA synchronous = NORMAL")
            with db:
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._sessions} ("
                    " project_key TEXT NOT NULL, session_id TEXT NOT NULL, subpath TEXT NOT NULL,"
                    " mtime INTEGER NOT NULL, summary TEXT, PRIMARY KEY (project_key, session_id, subpath))"
                )
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._entries} ("
                    " seq INTEGER PRIMARY KEY, project_key TEXT NOT NULL, session_id TEXT NOT NULL,"
                    " subpath TEXT NOT NULL, uuid TEXT, entry TEXT NOT NULL)"
                )
                db.execute(
                    f'CREATE INDEX IF NOT EXISTS "{self._prefix}entries_by_key"'
                    f" ON {self._entries} (project_key, session_id, subpath, seq)"
                )
                db.execute(
                    f'CREATE UNIQUE INDEX IF NOT EXISTS "{self._prefix}entries_by_uuid"'
                    f" ON {self._entries} (project_key, session_id, subpath, uuid) WHERE uuid IS NOT NULL"
                )
        except BaseException:
            db.close()
            raise
        return db


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL mode (once per file; it stays so). The switch does not wait for a busy database
    the way statements do, so another process opening the file at the same moment is waited for here."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            (mode,) = db.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
            continue
        if str(mode).lower() in ("wal", "memory"):  # an in-memory database has no journal file
            return
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError(f"could not switch {db!r} to WAL mode (journal mode {mode})")
        time.sleep(0.01)


def _create_private(path: Path) -> None:
    """Create the database file owner-only (0600) unless it exists (a file that exists keeps its mode). The
    transcripts it holds are as private as the CLI's own; SQLite gives its ``-wal``, ``-shm`` and ``-journal`` files
    the database file's mode."""
    if str(path) == ":memory:":
        return
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)
    logger.debug("created the session store %s (mode 0600)", path)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _columns(key: StoredKey) -> tuple[str, str, str]:
    return (key.project_key, key.session_id, key.subpath)
