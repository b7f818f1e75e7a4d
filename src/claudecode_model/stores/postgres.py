"""A Claude Code ``SessionStore`` on PostgreSQL: transcripts shared by every worker that reaches the database.

Pass it as ``ClaudeCodeModel(session_store=PostgresSessionStore(dsn))`` (or as ``session_store=`` of
claude-agent-sdk's own options): the SDK mirrors each session's transcript into it, and a turn that resumes a
session on another machine loads the transcript from it.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, LiteralString

try:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "PostgresSessionStore needs psycopg 3 and psycopg-pool: pip install 'claudecode-model[postgres]'"
    ) from error

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

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresSessionStore"]

logger = logging.getLogger(__name__)

_NOW_MS: LiteralString = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

_SCHEMA: list[LiteralString] = [
    """
    CREATE TABLE IF NOT EXISTS {sessions} (
        project_key text NOT NULL,
        session_id text NOT NULL,
        subpath text NOT NULL,
        mtime bigint NOT NULL,
        summary json,
        PRIMARY KEY (project_key, session_id, subpath)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS {entries} (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        project_key text NOT NULL,
        session_id text NOT NULL,
        subpath text NOT NULL,
        uuid text,
        entry json NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS {entries_by_key} ON {entries} (project_key, session_id, subpath, seq)",
    """
    CREATE UNIQUE INDEX IF NOT EXISTS {entries_by_uuid} ON {entries} (project_key, session_id, subpath, uuid)
    WHERE uuid IS NOT NULL
    """,
]


class PostgresSessionStore(SessionStore):
    """Session transcripts in PostgreSQL, through psycopg 3's asyncio API.

    Two tables (created on first use, named with ``table_prefix``): one row per transcript entry, and one per
    session transcript with its write time and the SDK's incremental summary. Entries with a ``uuid`` are stored
    once however often they are appended (the SDK retries failed batches); appends to one session are serialised
    by a row lock, so concurrent workers keep a consistent summary.

    Each event loop that uses the store gets its own small connection pool (asyncio connections belong to one
    loop; durable-execution engines may recover a run on a loop of their own). Close the store with
    :meth:`aclose` (or ``async with``) when done.

    Implements every optional method of the protocol: ``list_sessions``, ``list_session_summaries``, ``delete``
    and ``list_subkeys`` (so resumes also bring back subagent transcripts).
    """

    def __init__(
        self,
        conninfo: str,
        *,
        table_prefix: str = "claude_code_",
        max_connections: int = 4,
        connect_timeout: float = 10.0,
    ) -> None:
        """Create a store; nothing connects until it is first used.

        Args:
            conninfo: A libpq connection string or URI (``"postgresql://user@host/db"``,
                ``"host=/run/postgresql dbname=app"``).
            table_prefix: Prefix of the two tables (``<prefix>sessions``, ``<prefix>entries``).
            max_connections: Most connections each event loop's pool opens.
            connect_timeout: Seconds to wait for the first connection before failing with ``ConnectionError``.
        """
        if not isinstance(conninfo, str) or not conninfo.strip():
            raise ValueError(f"conninfo must be a non-empty libpq connection string, not {conninfo!r}")
        try:
            conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as error:
            raise ValueError(f"conninfo is not a valid libpq connection string: {error}") from None
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, not {max_connections!r}")
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int | float) or connect_timeout <= 0:
            raise ValueError(f"connect_timeout must be a positive number of seconds, not {connect_timeout!r}")
        prefix = checked_prefix(table_prefix)
        self._conninfo = conninfo
        self._connect_timeout = float(connect_timeout)
        self._max_connections = max_connections
        self._names = {
            "sessions": sql.Identifier(f"{prefix}sessions"),
            "entries": sql.Identifier(f"{prefix}entries"),
            "entries_by_key": sql.Identifier(f"{prefix}entries_by_key"),
            "entries_by_uuid": sql.Identifier(f"{prefix}entries_by_uuid"),
        }
        self._schema_lock_id = sum(ord(char) * 31**index for index, char in enumerate(prefix)) % (2**31)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncConnectionPool[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._schema_ready = False

    def __repr__(self) -> str:
        safe = {k: v for k, v in conninfo_to_dict(self._conninfo).items() if k != "password"}
        return f"PostgresSessionStore({safe!r})"

    # --- the SessionStore protocol ---------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store ``entries`` after those appended before (entries whose ``uuid`` is already there are skipped)."""
        stored = StoredKey.of(key)
        if not entries:
            return
        uuids = [entry_uuid(entry) for entry in entries]
        texts = [encode_entry(entry) for entry in entries]
        async with self._connection() as connection, connection.transaction():
            # The session row first: it takes the lock that serialises appends (and summary folds) per session.
            cursor = await connection.execute(
                self._sql(
                    "INSERT INTO {sessions} (project_key, session_id, subpath, mtime) VALUES (%s, %s, %s, "
                    + _NOW_MS
                    + ") ON CONFLICT (project_key, session_id, subpath) DO UPDATE"
                    " SET mtime = GREATEST(EXCLUDED.mtime, {sessions}.mtime + 1)"
                    " RETURNING summary::text"
                ),
                _columns(stored),
            )
            row = await cursor.fetchone()
            # Then the entries (one statement, in order) and the summary, sent together.
            async with connection.pipeline():
                await connection.execute(
                    self._sql(
                        "INSERT INTO {entries} (project_key, session_id, subpath, uuid, entry)"
                        " SELECT %s, %s, %s, batch.uuid, batch.entry::json"
                        " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS batch(uuid, entry, position)"
                        " ORDER BY batch.position"
                        " ON CONFLICT (project_key, session_id, subpath, uuid) WHERE uuid IS NOT NULL DO NOTHING"
                    ),
                    (*_columns(stored), uuids, texts),
                )
                if stored.is_main:
                    summary = folded_summary(row[0] if row is not None else None, stored, entries)
                    await connection.execute(
                        self._sql(
                            "UPDATE {sessions} SET summary = %s::json"
                            " WHERE project_key = %s AND session_id = %s AND subpath = %s"
                        ),
                        (summary, *_columns(stored)),
                    )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of the transcript in append order, or ``None`` for a transcript never written."""
        rows = await self._rows(
            "SELECT entry::text FROM {entries}"
            " WHERE project_key = %s AND session_id = %s AND subpath = %s ORDER BY seq",
            _columns(StoredKey.of(key)),
        )
        if not rows:
            return None
        return [decode_entry(text) for (text,) in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main transcripts of ``project_key`` with their last write time (epoch milliseconds)."""
        rows = await self._rows(
            "SELECT session_id, mtime FROM {sessions} WHERE project_key = %s AND subpath = %s",
            (project_key, MAIN_SUBPATH),
        )
        return [{"session_id": session_id, "mtime": int(mtime)} for session_id, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The SDK's summaries of the main transcripts of ``project_key``, stamped with their write time."""
        rows = await self._rows(
            "SELECT session_id, mtime, summary::text FROM {sessions}"
            " WHERE project_key = %s AND subpath = %s AND summary IS NOT NULL",
            (project_key, MAIN_SUBPATH),
        )
        return [summary_entry(session_id, mtime, data) for session_id, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; deleting a main transcript deletes its subagent transcripts too."""
        stored = StoredKey.of(key)
        if stored.is_main:
            condition: LiteralString = "project_key = %s AND session_id = %s"
            params: tuple[str, ...] = (stored.project_key, stored.session_id)
        else:
            condition = "project_key = %s AND session_id = %s AND subpath = %s"
            params = _columns(stored)
        async with self._connection() as connection, connection.transaction():
            await connection.execute(self._sql("DELETE FROM {sessions} WHERE " + condition), params)
            await connection.execute(self._sql("DELETE FROM {entries} WHERE " + condition), params)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths (subagent transcripts) stored under a session."""
        stored = StoredKey.of(key)
        rows = await self._rows(
            "SELECT subpath FROM {sessions} WHERE project_key = %s AND session_id = %s AND subpath <> %s"
            " ORDER BY subpath",
            (stored.project_key, stored.session_id, MAIN_SUBPATH),
        )
        return [subpath for (subpath,) in rows]

    # --- set-up and tear-down --------------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create the tables if they do not exist (done on first use anyway; safe to race with other workers)."""
        async with self._connection():
            pass

    async def aclose(self) -> None:
        """Close the connections of the current event loop's pool (and forget pools of loops that are gone)."""
        current = asyncio.get_running_loop()
        pools = dict(self._pools)
        self._pools.clear()
        for loop, pool in pools.items():
            if loop is current:
                await pool.close()
            elif not loop.is_closed():
                self._pools[loop] = pool  # still in use on its own loop: only that loop can close it

    async def __aenter__(self) -> PostgresSessionStore:
        await self.setup()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- internals -------------------------------------------------------------------------------------------

    def _sql(self, template: LiteralString) -> sql.Composed:
        return sql.SQL(template).format(**self._names)

    async def _rows(self, template: LiteralString, params: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """The rows a query (``template`` with the table names filled in) returns."""
        async with self._connection() as connection:
            cursor = await connection.execute(self._sql(template), params)
            return await cursor.fetchall()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection (autocommit: each statement commits unless inside ``transaction()``)."""
        pool = await self._pool()
        async with pool.connection() as connection:
            yield connection

    async def _pool(self) -> AsyncConnectionPool[Any]:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None and self._schema_ready:
            return pool
        async with self._opening.setdefault(loop, asyncio.Lock()):
            pool = self._pools.get(loop)
            if pool is None:
                pool = await self._open_pool()
                self._pools[loop] = pool
            if not self._schema_ready:
                async with pool.connection() as connection:
                    await self._create_schema(connection)
                self._schema_ready = True
        return pool

    async def _open_pool(self) -> AsyncConnectionPool[Any]:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=self._max_connections,
            open=False,
            name="claude-sessions",
            kwargs={"autocommit": True},
        )
        try:
            await pool.open(wait=True, timeout=self._connect_timeout)
        except PoolTimeout as error:
            await pool.close()
            raise ConnectionError(
                f"{self!r} could not connect to PostgreSQL within {self._connect_timeout:g} s: {error}"
            ) from error
        except BaseException:
            await pool.close()
            raise
        return pool

    async def _create_schema(self, connection: AsyncConnection[Any]) -> None:
        async with connection.transaction():
            # Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog: one worker at a time.
            await connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._schema_lock_id,))
            for statement in _SCHEMA:
                await connection.execute(self._sql(statement))


def _columns(key: StoredKey) -> tuple[str, str, str]:
    return (key.project_key, key.session_id, key.subpath)
