"""The session stores against claude-agent-sdk's own conformance suite, on a real PostgreSQL server and SQLite."""

from __future__ import annotations

import asyncio
import itertools
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from claude_agent_sdk.testing.session_store_conformance import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from claudecode_model.stores import PostgresSessionStore, SQLiteSessionStore
from tests._support.stores import delete_sqlite_file

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests._support.postgres import PostgresServer

KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}


@pytest.fixture
async def postgres_stores(postgres_dsn: str) -> AsyncIterator[Callable[[], PostgresSessionStore]]:
    """Makes empty stores in the test's database (the suite wants a fresh store per contract): own tables each."""
    counter = itertools.count()
    made: list[PostgresSessionStore] = []

    def make() -> PostgresSessionStore:
        store = PostgresSessionStore(postgres_dsn, table_prefix=f"store{next(counter)}_")
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


@pytest.fixture
async def sqlite_stores(tmp_path: Path) -> AsyncIterator[Callable[[], SQLiteSessionStore]]:
    counter = itertools.count()
    made: list[SQLiteSessionStore] = []

    def make() -> SQLiteSessionStore:
        store = SQLiteSessionStore(tmp_path / f"sessions-{next(counter)}.db")
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


@pytest.fixture(params=["postgres", "sqlite"])
def make_store(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> Callable[[], Any]:
    # postgres_server is named here so that it starts before the test's leak guard takes its snapshot.
    return request.getfixturevalue(f"{request.param}_stores")


async def test_conformance_suite(make_store: Callable[[], Any]):
    await run_session_store_conformance(make_store)


async def test_entries_round_trip_exactly(make_store: Callable[[], Any]):
    store = make_store()
    odd: list[Any] = [
        {"type": "user", "uuid": "u1", "text": "nul \x00 and lone surrogate \ud800 and emoji 🦜", "n": 1.5e300},
        {"type": "x", "nested": {"z": [1, {"b": None, "a": True}], "a": -0.0}, "big": 2**62},
        {"type": "title", "customTitle": "no uuid"},
    ]
    await store.append(KEY, odd)
    assert await store.load(KEY) == odd


async def test_a_retried_batch_is_stored_once(make_store: Callable[[], Any]):
    store = make_store()
    batch: list[Any] = [{"type": "user", "uuid": "a"}, {"type": "tag", "tag": "t"}, {"type": "user", "uuid": "b"}]
    await store.append(KEY, batch)
    await store.append(KEY, batch)  # the SDK retries a batch whose first attempt may have landed

    await store.append(KEY, [{"type": "user", "uuid": "c"}, {"type": "user", "uuid": "c", "again": True}])

    loaded = await store.load(KEY)
    assert loaded is not None
    assert [entry.get("uuid") for entry in loaded] == ["a", None, "b", None, "c"]
    assert "again" not in loaded[-1]


async def test_concurrent_appends_to_one_session_keep_every_entry_and_the_summary(make_store: Callable[[], Any]):
    store = make_store()  # one store object, many concurrent appends

    async def write(worker: int) -> None:
        for turn in range(5):
            entry: Any = {"type": "user", "uuid": f"{worker}-{turn}", "timestamp": "2026-01-01T00:00:00.000Z"}
            await store.append(KEY, [entry])

    await asyncio.gather(*(write(worker) for worker in range(4)))

    loaded = await store.load(KEY)
    assert loaded is not None
    assert sorted(entry["uuid"] for entry in loaded) == sorted(f"{w}-{t}" for w in range(4) for t in range(5))
    for worker in range(4):  # each writer's own entries stay in its call order
        mine = [entry["uuid"] for entry in loaded if entry["uuid"].startswith(f"{worker}-")]
        assert mine == [f"{worker}-{turn}" for turn in range(5)]
    [summary] = await store.list_session_summaries("proj")
    [listed] = await store.list_sessions("proj")
    assert summary["mtime"] >= listed["mtime"]


def test_bad_arguments_fail_before_any_connection(tmp_path: Path):
    with pytest.raises(ValueError, match="conninfo"):
        PostgresSessionStore("")
    with pytest.raises(ValueError, match="conninfo is not a valid"):
        PostgresSessionStore("host=/tmp port")
    with pytest.raises(ValueError, match="table_prefix"):
        PostgresSessionStore("dbname=x", table_prefix="x; DROP TABLE y")
    with pytest.raises(ValueError, match="max_connections"):
        PostgresSessionStore("dbname=x", max_connections=0)
    with pytest.raises(ValueError, match="connect_timeout"):
        PostgresSessionStore("dbname=x", connect_timeout=0)
    with pytest.raises(ValueError, match="does not exist"):
        SQLiteSessionStore(tmp_path / "missing" / "db.sqlite")
    with pytest.raises(ValueError, match="is a directory"):
        SQLiteSessionStore(tmp_path)


async def test_a_bad_key_is_refused_by_name(make_store: Callable[[], Any]):
    store = make_store()
    with pytest.raises(ValueError, match="subpath"):
        await store.load({"project_key": "p", "session_id": "s", "subpath": ""})
    with pytest.raises(ValueError, match="session_id"):
        await store.append({"project_key": "p", "session_id": ""}, [{"type": "x"}])


async def test_a_store_works_from_two_event_loops(postgres_stores: Callable[[], PostgresSessionStore]):
    """Durable-execution engines may recover a run on an event loop of their own: each loop gets its own pool."""
    store = postgres_stores()
    await store.append(KEY, [{"type": "user", "uuid": "main-loop"}])

    def other_loop() -> list[Any] | None:
        async def work() -> list[Any] | None:
            await store.append(KEY, [{"type": "user", "uuid": "other-loop"}])
            loaded = await store.load(KEY)
            await store.aclose()
            return loaded

        return asyncio.run(work())

    loaded = await asyncio.to_thread(other_loop)
    assert loaded is not None
    assert [entry["uuid"] for entry in loaded] == ["main-loop", "other-loop"]


async def test_an_unreachable_database_is_a_clear_connection_error(tmp_path: Path):
    store = PostgresSessionStore(f"postgresql://nobody@/nothing?host={tmp_path}&port=5432", connect_timeout=1)
    with pytest.raises(ConnectionError, match=r"could not connect to PostgreSQL within 1 s"):
        await store.load(KEY)
    await store.aclose()


async def test_two_sqlite_stores_on_one_file_share_it_like_two_processes(tmp_path: Path):
    """Each store has its own connection (as separate worker processes would); writes wait for each other."""
    path = tmp_path / "shared.db"
    first, second = SQLiteSessionStore(path), SQLiteSessionStore(path)

    async def write(store: SQLiteSessionStore, name: str) -> None:
        for turn in range(10):
            await store.append(KEY, [{"type": "user", "uuid": f"{name}-{turn}"}])

    try:
        await asyncio.gather(write(first, "a"), write(second, "b"))
        loaded = await second.load(KEY)
    finally:
        await first.aclose()
        await second.aclose()
    assert loaded is not None
    assert sorted(entry["uuid"] for entry in loaded) == sorted(f"{n}-{t}" for n in "ab" for t in range(10))


async def test_a_sqlite_file_deleted_while_in_use_is_noticed_and_opened_anew(tmp_path: Path):
    path = tmp_path / "sessions.db"
    store, other_worker = SQLiteSessionStore(path), SQLiteSessionStore(path)
    try:
        await store.append(KEY, [{"type": "user", "uuid": "before"}])
        delete_sqlite_file(path)
        with pytest.raises(FileNotFoundError, match="deleted or replaced while in use"):
            await store.append(KEY, [{"type": "user", "uuid": "after"}])
        await store.append(KEY, [{"type": "user", "uuid": "after"}])  # into a new file other workers see too
        assert path.exists()
        loaded = await other_worker.load(KEY)
    finally:
        await store.aclose()
        await other_worker.aclose()
    assert loaded is not None
    assert [entry["uuid"] for entry in loaded] == ["after"]


def _modes(path: Path) -> dict[str, int]:
    return {
        file.name.removeprefix(path.name): stat.S_IMODE(file.stat().st_mode)
        for file in path.parent.iterdir()
        if file.name.startswith(path.name)
    }


async def test_a_sqlite_file_the_store_creates_is_private_with_its_wal_and_shm(tmp_path: Path):
    path = tmp_path / "sessions.db"
    old = os.umask(0o022)  # a common umask: files would be created 0644
    store = SQLiteSessionStore(path)
    try:
        # A transcript line carries more keys than the SDK's minimal SessionStoreEntry names.
        line = cast(
            "SessionStoreEntry", {"type": "user", "uuid": "one", "message": {"content": "a private conversation"}}
        )
        await store.append(KEY, [line])
        modes = _modes(path)  # while the connection is open, its WAL and SHM files exist
    finally:
        os.umask(old)
        await store.aclose()
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}


async def test_a_sqlite_file_that_exists_keeps_its_mode(tmp_path: Path):
    path = tmp_path / "sessions.db"
    path.touch(mode=0o640)
    path.chmod(0o640)  # the owner chose to share it with a group
    store = SQLiteSessionStore(path)
    try:
        await store.append(KEY, [{"type": "user", "uuid": "one"}])
        modes = _modes(path)
    finally:
        await store.aclose()
    assert modes == {"": 0o640, "-wal": 0o640, "-shm": 0o640}
