"""Thinking end to end: signed ThinkingParts, thinking deltas, and thinking settings reaching the API request."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    TextPart,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.run import AgentRunResultEvent

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

THOUGHT = "Two plus two is four; I should say so plainly and briefly."


def thinks_then_answers(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ThinkingPart(THOUGHT, signature="sig-arith"), TextPart("4")])


async def test_thinking_arrives_signed_and_goes_back_to_claude(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(thinks_then_answers))
    claude_backend.text_chunk_size = 5
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    agent = Agent(model)
    try:
        async with agent.run_stream_events("What is 2 + 2?") as stream:
            events = [event async for event in stream]
        [done] = [event for event in events if isinstance(event, AgentRunResultEvent)]
        follow_up = await agent.run("And 3 + 3?", message_history=done.result.all_messages())
    finally:
        await model.aclose()

    deltas = [e.delta for e in events if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ThinkingPartDelta)]
    assert len([d for d in deltas if d.content_delta]) >= 5
    assert [d.signature_delta for d in deltas if d.signature_delta] == ["sig-arith"]
    response = done.result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.parts == [
        ThinkingPart(THOUGHT, signature="sig-arith", provider_name="claude-code"),
        TextPart("4"),
    ]
    assert done.result.output == "4"
    assert follow_up.output == "4"
    # The continued conversation carries the signed thinking block back to the API.
    assert claude_backend.requests[-1].has_thinking()
    earlier = [
        block
        for message in claude_backend.requests[-1].raw["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    assert earlier == [{"type": "thinking", "thinking": THOUGHT, "signature": "sig-arith"}]


def _sent_thinking(raw: dict[str, Any]) -> dict[str, Any] | None:
    thinking = raw.get("thinking")
    if thinking is None:
        return None
    return {key: value for key, value in thinking.items() if key in ("type", "budget_tokens")}


@pytest.mark.parametrize(
    ("model_name", "settings", "thinking", "effort"),
    [
        pytest.param("claude-sonnet-4-5", {}, {"type": "enabled", "budget_tokens": 31999}, None, id="cli-default"),
        pytest.param(
            "claude-sonnet-4-5",
            {"claude_code_thinking": 2048},
            {"type": "enabled", "budget_tokens": 2048},
            None,
            id="budget",
        ),
        pytest.param("claude-sonnet-4-5", {"claude_code_thinking": "disabled"}, None, None, id="disabled"),
        pytest.param("claude-sonnet-4-5", {"thinking": False}, None, None, id="unified-off"),
        pytest.param(
            "claude-sonnet-4-5",
            {"thinking": "low"},
            {"type": "enabled", "budget_tokens": 4096},
            None,
            id="unified-low-budget",
        ),
        pytest.param(
            "claude-sonnet-4-5",
            {"thinking": "low", "claude_code_thinking": 3000},
            {"type": "enabled", "budget_tokens": 3000},
            None,
            id="provider-setting-wins",
        ),
        pytest.param("claude-opus-4-6", {"thinking": "low"}, {"type": "adaptive"}, "low", id="unified-low-adaptive"),
        pytest.param("claude-opus-4-6", {"thinking": False}, None, "high", id="unified-off-adaptive"),
        pytest.param(
            "claude-opus-4-6",
            {"thinking": "low", "claude_code_effort": "max"},
            {"type": "adaptive"},
            "max",
            id="explicit-effort-wins",
        ),
    ],
)
async def test_thinking_settings_reach_the_request(
    claude_backend: OfflineBackend,
    model_name: str,
    settings: ClaudeCodeModelSettings,
    thinking: dict[str, Any] | None,
    effort: str | None,
):
    claude_backend.set_brain("ok")
    model = ClaudeCodeModel(model_name, env=claude_backend.cli_env(), keep_sessions=0)

    result = await Agent(model).run("hi", model_settings=settings)

    assert result.output == "ok"
    raw = claude_backend.requests[-1].raw
    assert raw["model"] == model_name
    assert _sent_thinking(raw) == thinking
    assert (raw.get("output_config") or {}).get("effort") == effort


async def test_unified_thinking_from_the_model_settings(claude_backend: OfflineBackend):
    claude_backend.set_brain("ok")
    model = ClaudeCodeModel("claude-sonnet-4-5", env=claude_backend.cli_env(), settings={"thinking": "medium"})
    try:
        await Agent(model).run("hi")
        await Agent(model, model_settings={"thinking": False}).run("hi again")
    finally:
        await model.aclose()

    first, second = claude_backend.requests
    assert _sent_thinking(first.raw) == {"type": "enabled", "budget_tokens": 10000}
    assert _sent_thinking(second.raw) is None
