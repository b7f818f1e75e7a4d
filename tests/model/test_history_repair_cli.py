"""A broken message history is repaired with a WARNING saying what changed, never silently."""

from __future__ import annotations

import logging

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model import ClaudeCodeModel
from claudecode_model._history.repair import repair_history
from claudecode_model.testing import OfflineBackend

FIRST_RESULT = ToolReturnPart("weather", "sunny", tool_call_id="call_1")
BROKEN: list[ModelMessage] = [
    ModelRequest(parts=[UserPromptPart("What is the weather?")]),
    ModelResponse(parts=[ToolCallPart("weather", {"city": "Paris"}, tool_call_id="call_1")]),
    ModelRequest(
        parts=[
            FIRST_RESULT,
            ToolReturnPart("weather", "sunny again", tool_call_id="call_1"),  # a second result for the same call
            ToolReturnPart("forecast", "rain", tool_call_id="call_gone"),  # its call was trimmed away
        ]
    ),
    ModelResponse(parts=[ToolCallPart("weather", {"city": "Rome"}, tool_call_id="call_1")]),  # the id again
    ModelRequest(parts=[ToolReturnPart("weather", "cloudy", tool_call_id="call_1")]),
    ModelResponse(parts=[TextPart("Paris is sunny, Rome cloudy.")]),
]


def test_the_repair_drops_orphans_and_second_results_and_renames_repeated_ids(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        repaired = repair_history(BROKEN)

    results = [
        (p.tool_name, p.content, p.tool_call_id) for m in repaired for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    calls = [
        (p.args_as_dict()["city"], p.tool_call_id) for m in repaired for p in m.parts if isinstance(p, ToolCallPart)
    ]
    assert results == [("weather", "sunny", "call_1"), ("weather", "cloudy", "call_1~2")]
    assert calls == [("Paris", "call_1"), ("Rome", "call_1~2")]
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 3
    assert "dropped a second result of tool 'weather' for call id 'call_1'" in warnings[0]
    assert "dropped the result of tool 'forecast' (call id 'call_gone')" in warnings[1]
    assert "tool call id 'call_1' is used again by a later call of tool 'weather'" in warnings[2]
    assert FIRST_RESULT.tool_call_id == "call_1"  # the caller's history is not modified


def test_a_sound_history_is_left_alone(caplog: pytest.LogCaptureFixture):
    sound = [*BROKEN[:2], ModelRequest(parts=[FIRST_RESULT]), *BROKEN[5:]]
    with caplog.at_level(logging.WARNING):
        assert repair_history(sound) == sound
    assert caplog.records == []


@pytest.mark.cli
async def test_a_broken_history_reaches_claude_repaired(
    claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture
):
    claude_backend.set_brain("noted")
    model = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0)

    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        result = await Agent(model).run("And tomorrow?", message_history=BROKEN)

    assert result.output == "noted"
    repairs = [record.getMessage() for record in caplog.records if "Message history repaired" in record.getMessage()]
    # (pydantic-ai itself drops the result whose call is missing before the model sees the history)
    assert any("dropped a second result of tool 'weather'" in message for message in repairs), repairs
    assert any("renamed to 'call_1~2'" in message for message in repairs), repairs
    request = claude_backend.requests[-1]
    ids = [
        block.get("id") or block.get("tool_use_id")
        for message in request.raw["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") in ("tool_use", "tool_result")
    ]
    assert len(ids) == 4  # two calls, two results: nothing orphaned reached the API
    assert len(set(ids)) == 2
