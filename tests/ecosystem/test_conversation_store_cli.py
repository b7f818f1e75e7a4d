"""pydantic-ai's ConversationStore: a stored conversation continues its Claude Code session (resume or fork), it is
not replayed."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai.messages import ModelMessage, ModelResponse

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.brains import echo_brain
from tests._support.responses import details

pytestmark = pytest.mark.cli


def sources(messages: list[ModelMessage]) -> list[str]:
    return [details(m)["session_source"] for m in messages if isinstance(m, ModelResponse)]


async def test_a_loaded_conversation_resumes_its_session_on_a_new_model(claude_backend: OfflineBackend):
    claude_backend.set_brain(echo_brain)
    store = InMemoryConversationStore()
    first_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        first = await Agent(first_model).run("one")
        await store.save(first)
        conversation_id = first.conversation_id
    finally:
        await first_model.aclose()  # as a process that stopped

    loaded = await store.load(conversation_id)
    assert loaded is not None
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        second = await Agent(model).run("two", conversation=loaded)
        await store.save(second)
        forked = await store.fork(conversation_id, at=2)
        branch = await Agent(model).run("three", conversation=forked)
    finally:
        await model.aclose()

    session = details(first.response)["session_id"]
    # The stored history ends where the CLI session's transcript does: the session is resumed, not replayed ...
    assert sources(second.new_messages()) == ["resume"]
    assert details(second.response)["session_id"] == session
    assert claude_backend.requests[-2].user_texts() == ["one", "two"]
    # ... and a fork of the stored conversation at its first answer branches the session there.
    assert sources(branch.new_messages()) == ["fork"]
    assert claude_backend.requests[-1].user_texts() == ["one", "three"]
    assert details(branch.response)["session_id"] != session
