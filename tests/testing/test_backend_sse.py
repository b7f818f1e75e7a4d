"""Unit tests: pydantic-ai response -> Anthropic SSE events and Message JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.usage import RequestUsage

from claudecode_model.testing._sse import SSEEvent, encode_events, message_json, stream_events

BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "hello there"}]}


def events_for(response: ModelResponse, chunk: int = 8) -> list[SSEEvent]:
    return stream_events(response, message_id="msg_1", model="claude-test", request_body=BODY, text_chunk_size=chunk)


def parse_wire(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse SSE bytes the way a client does: blank-line separated records with event and data lines."""
    parsed: list[tuple[str, dict[str, Any]]] = []
    for record in data.decode().split("\n\n"):
        if not record:
            continue
        lines = dict(line.split(": ", 1) for line in record.split("\n"))
        parsed.append((lines["event"], json.loads(lines["data"])))
    return parsed


def test_text_reply_has_the_exact_event_sequence_and_several_deltas() -> None:
    text = "The quick brown fox jumps over the lazy dog."
    events = events_for(ModelResponse(parts=[TextPart(text)]))

    deltas = math.ceil(len(text) / 8)
    assert [e.event for e in events] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0].data["message"]
    assert start["id"] == "msg_1"
    assert start["model"] == "claude-test"
    assert start["role"] == "assistant"
    assert start["content"] == []
    assert set(start["usage"]) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert events[1].data == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    pieces = [e.data["delta"]["text"] for e in events if e.event == "content_block_delta"]
    assert all(e.data["delta"]["type"] == "text_delta" for e in events if e.event == "content_block_delta")
    assert all(len(p) <= 8 for p in pieces)
    assert "".join(pieces) == text
    assert events[-2].data["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert events[-2].data["usage"]["output_tokens"] > 0
    assert events[-1].data == {"type": "message_stop"}


def test_tool_calls_stream_input_json_deltas_that_reassemble() -> None:
    args = {"query": "weather in Paris", "days": 3, "nested": {"unit": "C"}}
    response = ModelResponse(
        parts=[
            TextPart("Looking."),
            ToolCallPart("mcp__w__forecast", args, tool_call_id="pyd_ai_generated"),
            ToolCallPart("mcp__w__alerts", {}, tool_call_id="toolu_keep_me"),
        ]
    )
    events = events_for(response)

    starts = [e.data for e in events if e.event == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2]
    forecast, alerts = starts[1]["content_block"], starts[2]["content_block"]
    assert forecast["type"] == "tool_use"
    assert forecast["name"] == "mcp__w__forecast"
    assert forecast["input"] == {}
    assert forecast["id"].startswith("toolu_")
    assert forecast["id"] != "pyd_ai_generated"
    assert alerts["id"] == "toolu_keep_me"
    for index, expected in ((1, args), (2, {})):
        partials = [
            e.data["delta"]["partial_json"]
            for e in events
            if e.event == "content_block_delta" and e.data["index"] == index
        ]
        assert all(
            e.data["delta"]["type"] == "input_json_delta"
            for e in events
            if e.data.get("index") == index and e.event == "content_block_delta"
        )
        assert json.loads("".join(partials)) == expected
    forecast_partials = [e for e in events if e.event == "content_block_delta" and e.data["index"] == 1]
    assert len(forecast_partials) > 1
    assert events[-2].data["delta"]["stop_reason"] == "tool_use"


def test_duplicate_tool_ids_are_made_unique() -> None:
    response = ModelResponse(
        parts=[
            ToolCallPart("a", {}, tool_call_id="toolu_same"),
            ToolCallPart("b", {}, tool_call_id="toolu_same"),
        ]
    )
    message = message_json(response, message_id="msg_2", model="m", request_body=BODY)
    ids = [b["id"] for b in message["content"]]
    assert ids[0] == "toolu_same"
    assert len(set(ids)) == 2


def test_thinking_streams_thinking_then_signature_deltas() -> None:
    response = ModelResponse(parts=[ThinkingPart("Let me think about it.", signature="sig-abc"), TextPart("Answer.")])
    events = events_for(response, chunk=5)

    block0 = [e.data for e in events if e.data.get("index") == 0]
    assert block0[0]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    deltas = [d["delta"] for d in block0 if d["type"] == "content_block_delta"]
    assert [d["type"] for d in deltas] == ["thinking_delta"] * 5 + ["signature_delta"]
    assert "".join(d["thinking"] for d in deltas[:-1]) == "Let me think about it."
    assert deltas[-1]["signature"] == "sig-abc"
    assert block0[-1] == {"type": "content_block_stop", "index": 0}


def test_thinking_without_signature_gets_one() -> None:
    message = message_json(ModelResponse(parts=[ThinkingPart("hm")]), message_id="m", model="m", request_body=BODY)
    assert message["content"][0]["signature"]


def test_length_finish_maps_to_max_tokens_and_empty_text_is_skipped() -> None:
    response = ModelResponse(parts=[TextPart(""), TextPart("cut")], finish_reason="length")
    events = events_for(response)
    assert [e.data["content_block"]["type"] for e in events if e.event == "content_block_start"] == ["text"]
    assert events[-2].data["delta"]["stop_reason"] == "max_tokens"


def test_usage_comes_from_the_brain_when_reported() -> None:
    usage = RequestUsage(input_tokens=111, output_tokens=22, cache_read_tokens=5, cache_write_tokens=7)
    message = message_json(
        ModelResponse(parts=[TextPart("x")], usage=usage), message_id="m", model="m", request_body=BODY
    )
    assert message["usage"] == {
        "input_tokens": 111,
        "output_tokens": 22,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 5,
    }


def test_non_streaming_message_matches_the_stream() -> None:
    response = ModelResponse(parts=[TextPart("Hi!"), ToolCallPart("t", {"a": 1}, tool_call_id="toolu_1")])
    message = message_json(response, message_id="msg_9", model="claude-x", request_body=BODY)
    assert message["id"] == "msg_9"
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["model"] == "claude-x"
    assert message["content"] == [
        {"type": "text", "text": "Hi!"},
        {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"a": 1}},
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["stop_sequence"] is None
    assert message["usage"]["input_tokens"] > 0


def test_wire_format_parses_back_to_the_events() -> None:
    events = events_for(ModelResponse(parts=[TextPart("data: with\nnewline and: colons")]))
    assert parse_wire(encode_events(events)) == [(e.event, e.data) for e in events]


@pytest.mark.parametrize("size", [1, 3, 100])
def test_chunk_size_controls_the_number_of_text_deltas(size: int) -> None:
    text = "abcdefghij"
    events = events_for(ModelResponse(parts=[TextPart(text)]), chunk=size)
    assert sum(e.event == "content_block_delta" for e in events) == math.ceil(len(text) / size)
