"""The test PostgreSQL server itself: it runs, isolates each test's database, and leaves nothing behind."""

from __future__ import annotations

import os

import psycopg

from tests._support.postgres import PostgresServer


def test_each_test_gets_an_empty_database(postgres_dsn: str):
    with psycopg.connect(postgres_dsn) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        version = connection.execute("SHOW server_version").fetchone()
    assert tables == (0,)
    assert version is not None
    assert int(str(version[0]).split(".")[0]) >= 13


def test_the_server_runs_unprivileged_and_leaves_nothing_behind():
    server = PostgresServer()
    server.start()
    root = server.root
    assert root is not None
    pid = server._process.pid if server._process is not None else None
    assert pid is not None
    owner = os.stat(f"/proc/{pid}").st_uid
    with psycopg.connect(server.dsn()) as connection:
        connection.execute("CREATE TABLE t (x int)")
        connection.execute("INSERT INTO t VALUES (1)")
        connection.commit()
    server.stop()

    assert owner != 0 or os.geteuid() != 0
    assert not root.exists()
    assert not os.path.exists(f"/proc/{pid}")  # stopped and reaped
