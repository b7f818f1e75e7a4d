"""Compaction under the user's control, through the real CLI and a backend with a context window.

By default Claude Code never compacts: a conversation that outgrows the window fails with pydantic-ai's
``ModelContextWindowExceededError`` (this library's subclass), as on ``AnthropicModel``, and every request carries the
whole history. With ``claude_code_compaction=True`` Claude Code compacts, and the response says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeContextWindowExceededError, ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

CHUNK = "x " * 50_000
"""One turn's prompt: about 25,000 tokens (the backend counts one per four characters, as Claude Code estimates)."""

WINDOW = 90_000
"""The backend's context window: the fourth turn of CHUNKs is over it."""

CLI_WINDOW = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}
"""Claude Code's smallest compaction window (it compacts above about 80,000 tokens of its estimate)."""

SUMMARY = "<summary>The user sent long runs of x.</summary>"


def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers Claude Code's request for a summary with one, every other request with ``ok``."""
    prompts = [str(part.content) for part in messages[-1].parts if isinstance(part, UserPromptPart)]
    if prompts and "TEXT ONLY" in prompts[-1]:
        return ModelResponse(parts=[TextPart(SUMMARY)])
    return ModelResponse(parts=[TextPart("ok")])


@pytest.fixture
def backend() -> Iterator[OfflineBackend]:
    with OfflineBackend(FunctionModel(brain), context_window=WINDOW) as backend:
        yield backend


async def _four_turns(agent: Agent[None, str]) -> list[ModelMessage]:
    history: list[ModelMessage] = []
    for _ in range(4):
        result = await agent.run(CHUNK, message_history=history)
        history = result.all_messages()
    return history


async def test_by_default_a_conversation_over_the_window_fails_and_is_never_compacted(backend: OfflineBackend):
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, settings={"claude_code_env": CLI_WINDOW})
    try:
        with pytest.raises(ClaudeCodeContextWindowExceededError) as raised:
            await _four_turns(Agent(model))
    finally:
        await model.aclose()

    assert isinstance(raised.value, ModelContextWindowExceededError)
    assert all("TEXT ONLY" not in request.last_user_text() for request in backend.requests)
    assert len(backend.requests[-1].user_texts()) == 4  # the whole history, not a summary


async def test_with_compaction_claude_code_compacts_and_the_response_says_so(
    backend: OfflineBackend, caplog: pytest.LogCaptureFixture
):
    settings = {"claude_code_env": CLI_WINDOW, "claude_code_compaction": True}
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, settings=settings)  # type: ignore[arg-type]
    try:
        with caplog.at_level(logging.INFO, logger="claudecode_model"):
            history = await _four_turns(Agent(model))
    finally:
        await model.aclose()

    responses = [message for message in history if isinstance(message, ModelResponse)]
    compacted = [details["compacted"] for r in responses if "compacted" in (details := r.provider_details or {})]
    assert len(compacted) == 1
    assert compacted[0][0]["trigger"] == "auto"
    assert compacted[0][0]["pre_tokens"] > compacted[0][0]["post_tokens"]
    assert any("TEXT ONLY" in request.last_user_text() for request in backend.requests)
    assert any("compacted the conversation" in record.getMessage() for record in caplog.records)
