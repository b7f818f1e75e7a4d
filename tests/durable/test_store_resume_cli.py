"""A conversation moves between workers through a session store: the real CLI, the offline backend, real databases.

Each "worker" is a model with its own ``CLAUDE_CONFIG_DIR``, as another process or machine would have: what one
worker's CLI wrote on its disk, the other cannot see. Only the store is shared.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel
from tests._support.agents import converse, run_and_close
from tests._support.stores import counting_echo_brain, store_key, worker_env

if TYPE_CHECKING:
    from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def resume_copies() -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob("claude-resume-*"))


def transcripts(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["CLAUDE_CONFIG_DIR"]).glob("projects/*/*.jsonl"))


def session_of(messages: list[ModelMessage]) -> str:
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    session_id = (response.provider_details or {})["session_id"]
    assert isinstance(session_id, str)
    return session_id


async def test_a_follow_up_on_another_worker_resumes_the_session_from_the_store(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path
):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    env_a, env_b = worker_env(claude_backend, tmp_path, "a"), worker_env(claude_backend, tmp_path, "b")
    worker_a = ClaudeCodeModel(env=env_a, session_store=store, keep_sessions=0)
    first = await Agent(worker_a, instructions="Be brief.").run("remember the word kiwi")
    session_id = session_of(first.all_messages())

    worker_b = ClaudeCodeModel(env=env_b, session_store=store)
    try:
        second = await Agent(worker_b, instructions="Be brief.").run(
            "what was the word?", message_history=first.all_messages()
        )
    finally:
        await worker_b.aclose()

    assert second.output == "echo: what was the word? (prompts seen: 2)"
    # The SDK resumed from a private copy of the transcript (with the CLI's credentials): gone with the CLI.
    assert not resume_copies()
    assert session_of(second.all_messages()) == session_id  # the same Claude Code session, resumed
    seen = claude_backend.requests[-1]
    assert seen.user_texts()[-2:] == ["remember the word kiwi", "what was the word?"]
    assert "echo: remember the word kiwi (prompts seen: 1)" in [
        part.content for message in seen.messages for part in message.parts if isinstance(part, TextPart)
    ]
    # Worker B replayed nothing: no transcript was written into its config dir (a replay writes one there).
    assert transcripts(env_b) == []
    # The store holds the whole conversation, both turns, under the session id.
    entries = await store.load(store_key(session_id))
    assert entries is not None
    user_texts = [
        block["text"] if isinstance(block, dict) else block
        for entry in entries
        if entry["type"] == "user"
        for block in _content(entry)
    ]
    assert "remember the word kiwi" in user_texts
    assert "what was the word?" in user_texts


async def test_a_history_cut_short_forks_the_stored_session_at_that_point(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path
):
    """Continuing from an earlier response gives Claude exactly that history, on any worker; the session that went
    on stays intact for whoever continues it."""
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=store)
    one, two, _ = await converse(worker_a, "one", "two", "three")
    original = session_of(two.all_messages())

    worker_b = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "b"), session_store=store)
    try:
        branch = await Agent(worker_b).run("branch", message_history=one.all_messages())
        assert claude_backend.requests[-1].user_texts() == ["one", "branch"]
        assert branch.output == "echo: branch (prompts seen: 2)"
        forked = session_of(branch.all_messages())
        assert forked != original

        more = await Agent(worker_b).run("more", message_history=branch.all_messages())
        assert claude_backend.requests[-1].user_texts() == ["one", "branch", "more"]
        assert session_of(more.all_messages()) == forked  # the branch goes on as a session of its own
    finally:
        await worker_b.aclose()

    after_two = await run_and_close(
        ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "c"), session_store=store),
        "after two",
        message_history=two.all_messages(),
    )
    assert claude_backend.requests[-1].user_texts() == ["one", "two", "after two"]
    assert session_of(after_two.all_messages()) != original  # "three" had continued it: this is another branch


async def test_a_history_cut_short_forks_the_local_session_too(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0)
    agent = Agent(model)
    one = await agent.run("one")
    two = await agent.run("two", message_history=one.all_messages())
    assert session_of(two.all_messages()) == session_of(one.all_messages())  # resumed: nothing was cut

    again = await agent.run("instead of two", message_history=one.all_messages())

    assert claude_backend.requests[-1].user_texts() == ["one", "instead of two"]
    assert session_of(again.all_messages()) != session_of(one.all_messages())


async def test_without_a_store_another_worker_replays_the_history(claude_backend: OfflineBackend, tmp_path: Path):
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    env_b = worker_env(claude_backend, tmp_path, "b")
    first = await Agent(ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), keep_sessions=0)).run("hello")
    second = await run_and_close(ClaudeCodeModel(env=env_b), "again", message_history=first.all_messages())

    assert second.output == "echo: again (prompts seen: 2)"
    assert claude_backend.requests[-1].user_texts() == ["hello", "again"]
    assert session_of(second.all_messages()) != session_of(first.all_messages())  # a new session, replayed


async def test_a_session_whose_last_turn_never_reached_the_store_is_replayed_not_resumed(
    claude_backend: OfflineBackend, store: Any, tmp_path: Path
):
    """A worker killed mid-turn leaves the store without that turn: the next worker must not resume a session that
    lacks what the history holds."""
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    worker_a = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "a"), session_store=store, keep_sessions=0)
    one = await Agent(worker_a).run("one")
    key = store_key(session_of(one.all_messages()))
    first_turn = await store.load(key)
    two = await Agent(worker_a).run("two", message_history=one.all_messages())
    # What the store would hold had worker A died before the second turn's entries were flushed.
    await store.delete(key)
    await store.append(key, first_turn)

    three = await run_and_close(
        ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "b"), session_store=store),
        "three",
        message_history=two.all_messages(),
    )

    assert claude_backend.requests[-1].user_texts() == ["one", "two", "three"]
    assert three.output == "echo: three (prompts seen: 3)"
    assert session_of(three.all_messages()) != key["session_id"]  # a new session, given the history


async def test_a_replayed_history_reaches_the_store_whole(claude_backend: OfflineBackend, store: Any, tmp_path: Path):
    """A session that began as a replay is resumed elsewhere with its whole history, not only its new turns (the
    CLI mirrors only what it writes itself)."""
    claude_backend.set_brain(FunctionModel(counting_echo_brain))
    other = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("from another model")])))
    earlier = await other.run("question for the other model")
    worker_b = ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "b"), session_store=store, keep_sessions=0)
    replayed = await Agent(worker_b).run("now claude code", message_history=earlier.all_messages())
    assert claude_backend.requests[-1].user_texts() == ["question for the other model", "now claude code"]

    resumed = await run_and_close(
        ClaudeCodeModel(env=worker_env(claude_backend, tmp_path, "c"), session_store=store),
        "and on worker c",
        message_history=replayed.all_messages(),
    )

    assert session_of(resumed.all_messages()) == session_of(replayed.all_messages())
    assert claude_backend.requests[-1].user_texts() == [
        "question for the other model",
        "now claude code",
        "and on worker c",
    ]


def _content(entry: Any) -> list[Any]:
    content = entry.get("message", {}).get("content", [])
    return [content] if isinstance(content, str) else [block for block in content if block.get("type") == "text"]


def test_a_session_store_without_the_protocol_is_refused_by_name():
    class NotAStore:
        def append(self, key: Any, entries: Any) -> None: ...

    with pytest.raises(TypeError, match=r"NotAStore lacks async append\(\) and load\(\)"):
        ClaudeCodeModel(session_store=NotAStore())  # type: ignore[arg-type]
