"""Session store faults lose nothing: the real CLI, the offline backend, a real PostgreSQL and SQLite.

Each "worker" is a model with its own ``CLAUDE_CONFIG_DIR``; only the store is shared. Every test asserts what
Claude received on the next turn of the worker where the fault happened and on another worker, and (the leak guard
of tests/conftest.py, and the resume copies here) that nothing is left.
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry
from pydantic_ai import Agent, AgentRunResult
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, PostgresSessionStore, SQLiteSessionStore
from tests._support.agents import converse, run_and_close
from tests._support.polling import wait_for
from tests._support.stores import counting_echo_brain, delete_sqlite_file, store_key, worker_env

if TYPE_CHECKING:
    from pydantic_ai.agent import AgentRunResult

    from claudecode_model.testing import OfflineBackend
    from tests._support.postgres import PostgresServer

pytestmark = pytest.mark.cli


class FailingStore(SessionStore):
    """A real store whose appends fail (as on a full disk) while ``failing`` is set."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.failing = False

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if self.failing:
            raise OSError(28, "No space left on device")
        await self.store.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self.store.load(key)


def details(result: AgentRunResult[Any]) -> dict[str, Any]:
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    return response.provider_details or {}


def claude_saw(backend: OfflineBackend) -> list[str]:
    """The user prompts of the last request the backend received."""
    return backend.requests[-1].user_texts()


def claude_replies(backend: OfflineBackend) -> list[str]:
    """Claude's own texts in the last request the backend received."""
    seen = backend.requests[-1]
    return [part.content for message in seen.messages for part in message.parts if isinstance(part, TextPart)]


async def fourth_turn_on_worker(
    worker: str,
    claude_backend: OfflineBackend,
    tmp_path: Path,
    store: Any,
    three: AgentRunResult[str],
    *,
    source: str,
) -> AgentRunResult[str]:
    """Turn four of the conversation on a new worker sharing ``store``: Claude saw all four prompts, the worker's
    session came from ``source`` (``"resume"``: the store; ``"replay"``: the history), and nothing is left."""
    four = await run_and_close(
        ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, worker), session_store=store),
        "four",
        message_history=three.all_messages(),
    )
    assert claude_saw(claude_backend) == ["one", "two", "three", "four"]
    assert details(four)["session_source"] == source
    nothing_left()
    return four


def nothing_left() -> None:
    assert not list(Path(tempfile.gettempdir()).glob("claude-resume-*"))


async def test_a_store_write_that_fails_for_one_turn_is_written_by_the_next_and_another_worker_resumes_it_whole(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    # FailingStore inherits the Protocol's optional methods on purpose: the SDK takes them as not implemented.
    failing = FailingStore(store)  # type: ignore[abstract]
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=failing)
    agent = Agent(worker_a)
    try:
        one = await agent.run("one")
        failing.failing = True
        with caplog.at_level(logging.WARNING, logger="claudecode_model"):
            two = await agent.run("two", message_history=one.all_messages())
        failing.failing = False
        assert two.output == "echo: two (prompts seen: 2)"  # the answer comes
        assert details(two)["session_store"] == "incomplete"
        assert "could not be written" in caplog.text
        three = await agent.run("three", message_history=two.all_messages())
        assert claude_saw(claude_backend) == ["one", "two", "three"]
        assert "session_store" not in details(three)  # this turn wrote the entries the last one could not
    finally:
        await worker_a.aclose()

    # From the store: whole again.
    four = await fourth_turn_on_worker("b", claude_backend, tmp_path, store, three, source="resume")
    assert details(four)["session_id"] == details(one)["session_id"]


async def test_a_stored_transcript_with_a_gap_is_replayed_never_resumed(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path
):
    """What the store held on main after a write failed and a later turn was written (another worker's CLI then
    resumed a conversation without turn two)."""
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=store)
    _, _, three = await converse(worker_a, "one", "two", "three")
    key = store_key(details(three)["session_id"])
    entries = await store.load(key)
    assert entries is not None
    await store.delete(key)
    await store.append(key, [entry for entry in entries if "echo: two" not in str(entry.get("message"))])

    await fourth_turn_on_worker("b", claude_backend, tmp_path, store, three, source="replay")
    assert "echo: two (prompts seen: 2)" in claude_replies(claude_backend)


async def test_a_database_that_hangs_during_a_turn_and_during_a_resume(
    claude_backend: OfflineBackend,
    postgres_server: PostgresServer,
    postgres_dsn: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    store = PostgresSessionStore(postgres_dsn)
    worker_a = ClaudeCodeModel(
        env=worker_env(claude_backend, tmp_path, "a"), session_store=store, session_store_timeout=1
    )
    worker_b = ClaudeCodeModel(
        env=worker_env(claude_backend, tmp_path, "b"), session_store=store, session_store_timeout=1
    )
    agent = Agent(worker_a)
    try:
        one = await agent.run("one")
        postgres_server.pause()
        try:
            with caplog.at_level(logging.WARNING, logger="claudecode_model"):
                two = await agent.run("two", message_history=one.all_messages())
                assert two.output == "echo: two (prompts seen: 2)"
                assert details(two)["session_store"] == "incomplete"
                # Another worker, while the database hangs: the history it was given is replayed.
                elsewhere = await Agent(worker_b).run("elsewhere", message_history=two.all_messages())
        finally:
            postgres_server.resume()
        assert claude_saw(claude_backend) == ["one", "two", "elsewhere"]
        assert details(elsewhere)["session_source"] == "replay"
        assert details(elsewhere)["session_store"] == "incomplete"
        assert "could not be loaded" in caplog.text

        three = await agent.run("three", message_history=two.all_messages())
        assert claude_saw(claude_backend) == ["one", "two", "three"]
        assert "session_store" not in details(three)
    finally:
        await worker_a.aclose()
        await worker_b.aclose()

    await fourth_turn_on_worker("c", claude_backend, tmp_path, store, three, source="resume")
    await store.aclose()


async def test_a_locked_sqlite_file_does_not_hold_the_answer_and_the_next_turn_writes_what_it_missed(
    claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    worker_a = ClaudeCodeModel(
        env=worker_env(claude_backend, tmp_path, "a"), session_store=store, session_store_timeout=1
    )
    agent = Agent(worker_a)
    try:
        one = await agent.run("one")
        lock = sqlite3.connect(path, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            two = await agent.run("two", message_history=one.all_messages())
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert two.output == "echo: two (prompts seen: 2)"
        assert details(two)["session_store"] == "incomplete"
        # The write that timed out ends once the lock is gone (SQLite's busy handler polls); on a loaded machine that
        # may take longer than the grace the next turn gives it, so the test waits for it, as time would.
        guarded = worker_a._resources._runner().session_store
        assert guarded is not None
        assert await wait_for(lambda: guarded._stuck is None or guarded._stuck.done(), within=30)
        three = await agent.run("three", message_history=two.all_messages())
        assert "session_store" not in details(three)
    finally:
        await worker_a.aclose()

    await fourth_turn_on_worker("b", claude_backend, tmp_path, store, three, source="resume")
    await store.aclose()


async def test_a_sqlite_file_deleted_mid_conversation_is_noticed_and_another_worker_replays(
    claude_backend: OfflineBackend, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=store)
    agent = Agent(worker_a)
    try:
        one = await agent.run("one")
        delete_sqlite_file(path)
        with caplog.at_level(logging.WARNING):
            two = await agent.run("two", message_history=one.all_messages())
        assert two.output == "echo: two (prompts seen: 2)"
        assert "deleted or replaced while in use" in caplog.text
        assert path.exists()  # opened anew, where other workers see what is written now
    finally:
        await worker_a.aclose()

    three = await run_and_close(
        ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "b"), session_store=SQLiteSessionStore(path)),
        "three",
        message_history=two.all_messages(),
    )
    await store.aclose()
    assert claude_saw(claude_backend) == ["one", "two", "three"]
    assert details(three)["session_source"] == "replay"  # the new file lacks turn one
    nothing_left()


async def test_a_store_that_cannot_be_reached_makes_another_worker_replay_instead_of_failing(
    claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=store)
    one = await run_and_close(worker_a, "one")
    await store.aclose()
    unreachable = PostgresSessionStore(f"postgresql://nobody@/nothing?host={tmp_path}&port=5432", connect_timeout=1)
    try:
        two = await run_and_close(
            ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "b"), session_store=unreachable),
            "two",
            message_history=one.all_messages(),
        )
    finally:
        await unreachable.aclose()
    assert two.output == "echo: two (prompts seen: 2)"
    assert claude_saw(claude_backend) == ["one", "two"]
    assert details(two)["session_source"] == "replay"
    assert details(two)["session_store"] == "incomplete"
    nothing_left()


async def test_a_resume_on_the_worker_whose_write_failed_sends_the_missing_entries_first(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path
):
    """No live CLI keeps the session (keep_sessions=0): the next turn resumes from the store, which lacks turn two
    until this worker sends what it kept."""
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    # FailingStore inherits the Protocol's optional methods on purpose: the SDK takes them as not implemented.
    failing = FailingStore(store)  # type: ignore[abstract]
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=failing, keep_sessions=0)
    agent = Agent(worker_a)
    try:
        one = await agent.run("one")
        failing.failing = True
        two = await agent.run("two", message_history=one.all_messages())
        failing.failing = False
        assert details(two)["session_store"] == "incomplete"
        three = await agent.run("three", message_history=two.all_messages())
    finally:
        await worker_a.aclose()
    assert claude_saw(claude_backend) == ["one", "two", "three"]
    assert details(three)["session_source"] == "resume"  # not a replay: the store was made whole first
    assert "session_store" not in details(three)

    await fourth_turn_on_worker("b", claude_backend, tmp_path, store, three, source="resume")
