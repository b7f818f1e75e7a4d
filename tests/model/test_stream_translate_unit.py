"""Unit tests of the SDK message -> pydantic-ai event translation, for branches the CLI tests rarely reach."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from decimal import Decimal
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from pydantic_ai._parts_manager import ModelResponsePartsManager
from pydantic_ai.messages import (
    ModelResponseStreamEvent,
    NativeToolCallPart,
    NativeToolReturnPart,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    ThinkingPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.usage import RequestUsage

from claudecode_model import ClaudeCodeModel, CLIInterruptedError
from claudecode_model._sessions.session import Delivery
from claudecode_model._stream.errors import map_error
from claudecode_model._stream.translator import TurnTranslator, delivery_unless_streaming
from tests._support.sdk_messages import result_message as result

PREFIX = "mcp__pydantic_tools__"
TEXT_B = {"type": "text", "text": "b"}


def translator() -> TurnTranslator:
    parts = ModelResponsePartsManager(model_request_parameters=ModelRequestParameters())
    return TurnTranslator(parts, tool_prefixes=(PREFIX,))


def feed(t: TurnTranslator, *messages: Any) -> list[ModelResponseStreamEvent]:
    return [event for message in messages for event in t.feed(message)]


def parts_of(t: TurnTranslator) -> list[Any]:
    return t._parts.get_parts()


def stream(event: dict[str, Any], parent: str | None = None) -> StreamEvent:
    return StreamEvent(uuid="u", session_id="s", event=event, parent_tool_use_id=parent)


def assistant(*blocks: Any, message_id: str = "msg_1", **extra: Any) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model="claude-test", message_id=message_id, **extra)


def start(message_id: str = "msg_1", **usage: int) -> StreamEvent:
    return stream({"type": "message_start", "message": {"id": message_id, "usage": usage}})


def delta(index: int, **payload: Any) -> StreamEvent:
    return stream({"type": "content_block_delta", "index": index, "delta": payload})


def test_complete_messages_without_partial_events_become_parts_in_order():
    t = translator()
    events = feed(
        t,
        assistant(
            ThinkingBlock("hmm", "sig"),
            TextBlock("Let me look."),
            ToolUseBlock("toolu_1", f"{PREFIX}lookup", {"q": "x"}),
            ToolUseBlock("toolu_2", "Read", {"path": "/etc/hostname"}),
        ),
        UserMessage(
            content=[
                ToolResultBlock(
                    "toolu_1", [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
                ),
                ToolResultBlock("toolu_2", "denied", is_error=True),
                TextBlock("not a tool result"),
            ]
        ),
        assistant(TextBlock("Done."), message_id="msg_2"),
    )

    assert all(isinstance(e, PartStartEvent) for e in events)
    parts = parts_of(t)
    assert parts[0] == ThinkingPart("hmm", signature="sig", provider_name="claude-code")
    assert parts[1] == TextPart("Let me look.")
    assert isinstance(parts[2], NativeToolCallPart)
    assert (parts[2].tool_name, parts[2].args, parts[2].provider_details) == (
        "lookup",
        {"q": "x"},
        {"cli_tool_name": f"{PREFIX}lookup"},
    )
    assert isinstance(parts[3], NativeToolCallPart)
    assert parts[3].tool_name == "Read"  # built-in tools keep their name
    returns = [p for p in parts if isinstance(p, NativeToolReturnPart)]
    assert [(r.tool_name, r.content, r.outcome) for r in returns] == [
        ("lookup", "a\nb", "success"),
        ("Read", "denied", "failed"),
    ]
    assert returns[1].provider_details == {"cli_tool_name": "Read", "is_error": True}
    assert parts[-1] == TextPart("Done.")


def test_user_message_with_text_content_and_empty_tool_result():
    t = translator()
    assert feed(t, UserMessage(content="plain text")) == []
    feed(t, UserMessage(content=[ToolResultBlock("toolu_unknown", None)]))

    [ret] = parts_of(t)
    assert isinstance(ret, NativeToolReturnPart)
    assert (ret.tool_name, ret.content, ret.outcome) == ("", "", "success")


def test_subagent_text_stays_inside_and_its_tool_calls_are_linked_to_the_parent():
    t = translator()
    feed(
        t,
        start(),
        stream({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}, "toolu_9"),
        AssistantMessage(
            content=[TextBlock("inner"), ToolUseBlock("toolu_8", "Read", {"file_path": "a"})],
            model="m",
            parent_tool_use_id="toolu_9",
        ),
        UserMessage(content=[ToolResultBlock("toolu_8", "inner result")], parent_tool_use_id="toolu_9"),
    )
    call, returned = parts_of(t)
    assert isinstance(call, NativeToolCallPart)
    assert isinstance(returned, NativeToolReturnPart)
    assert (call.tool_name, call.tool_call_id, returned.content) == ("Read", "toolu_8", "inner result")
    assert (call.provider_details or {})["parent_tool_call_id"] == "toolu_9"
    assert (returned.provider_details or {})["parent_tool_call_id"] == "toolu_9"


def test_api_error_message_is_recorded_not_shown():
    t = translator()
    events = feed(t, assistant(TextBlock("API Error: 500"), TextBlock("try later"), error="server_error"))

    assert events == []
    assert t.outcome.api_error_kind == "server_error"
    assert t.outcome.api_error_text == "API Error: 500 try later"


def test_streamed_blocks_are_not_duplicated_by_the_complete_message():
    t = translator()
    events = feed(
        t,
        start(input_tokens=10, cache_read_input_tokens=2, cache_creation_input_tokens=3, output_tokens=1),
        stream({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        delta(0, type="text_delta", text="Hel"),
        delta(0, type="text_delta", text="lo"),
        delta(0, type="unknown_delta", text="ignored"),
        stream({"type": "content_block_stop", "index": 0}),
        assistant(TextBlock("Hello")),
        stream({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
        stream({"type": "message_delta", "delta": {}, "usage": {}}),
        stream({"type": "message_stop"}),
    )

    assert len([e for e in events if isinstance(e, PartStartEvent)]) == 1
    assert len([e for e in events if isinstance(e, PartDeltaEvent)]) == 1
    assert parts_of(t) == [TextPart("Hello")]
    assert t.outcome.last_stop_reason == "end_turn"
    assert t.outcome.stream_usage == RequestUsage(
        input_tokens=10, output_tokens=8, cache_read_tokens=2, cache_write_tokens=3
    )


def test_deltas_before_message_start_or_without_index_are_ignored():
    t = translator()
    events = feed(
        t,
        delta(0, type="text_delta", text="orphan"),
        start(),
        stream({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "no index"}}),
    )
    assert events == []


def test_streamed_tool_call_is_settled_to_the_final_arguments():
    t = translator()
    tool_start = {"type": "tool_use", "id": "toolu_1", "name": f"{PREFIX}lookup", "input": {}}
    feed(
        t,
        start(),
        stream({"type": "content_block_start", "index": 0, "content_block": tool_start}),
        delta(0, type="input_json_delta", partial_json=""),
        delta(0, type="input_json_delta", partial_json='{"q": "par'),
    )
    [partial] = parts_of(t)
    assert isinstance(partial, NativeToolCallPart)
    assert partial.tool_name == "lookup"

    events = feed(t, assistant(ToolUseBlock("toolu_1", f"{PREFIX}lookup", {"q": "paris"})))

    assert len(events) == 1
    [final] = parts_of(t)
    assert isinstance(final, NativeToolCallPart)
    assert final.args_as_dict() == {"q": "paris"}
    assert final.tool_call_id == "toolu_1"


def test_streamed_tool_call_with_complete_arguments_emits_nothing_more():
    t = translator()
    tool_start = {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {}}
    feed(
        t,
        start(),
        stream({"type": "content_block_start", "index": 0, "content_block": tool_start}),
        delta(0, type="input_json_delta", partial_json='{"pattern": "x"}'),
    )

    assert feed(t, assistant(ToolUseBlock("toolu_1", "Grep", {"pattern": "x"}))) == []
    # A streamed text block settled by its complete message also emits nothing.
    feed(t, delta(1, type="text_delta", text="ok"))
    assert feed(t, assistant(TextBlock("ok"), message_id="msg_1")) == []


def test_thinking_and_signature_deltas():
    t = translator()
    events = feed(
        t,
        start(),
        delta(0, type="thinking_delta", thinking="First, "),
        delta(0, type="thinking_delta", thinking="think."),
        delta(0, type="signature_delta", signature="sig-x"),
    )

    assert isinstance(events[0], PartStartEvent)
    assert parts_of(t) == [ThinkingPart("First, think.", signature="sig-x", provider_name="claude-code")]


def test_system_messages_give_the_session():
    t = translator()
    feed(t, SystemMessage(subtype="status", data={"session_id": "ignored"}))
    assert t.outcome.session_id is None

    feed(t, SystemMessage(subtype="init", data={"session_id": "sess-9", "tools": []}))
    assert t.outcome.session_id == "sess-9"
    assert t.outcome.init_data["tools"] == []
    assert t.provider_details() == {"session_id": "sess-9"}
    assert feed(t, object()) == []  # unknown SDK message kinds are skipped


def test_usage_prefers_the_result_totals_and_counts_cost_per_request():
    t = translator()
    feed(t, start(input_tokens=1, output_tokens=1))
    feed(
        t,
        result(
            usage={"input_tokens": 40, "output_tokens": 9, "cache_read_input_tokens": 4},
            total_cost_usd=0.25,
        ),
    )

    usage = t.usage(previous_cost_usd=0.1)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (40, 9, 4, 0)
    assert usage.cost == Decimal("0.15")
    assert t.usage(previous_cost_usd=None).cost == Decimal("0.25")
    assert t.usage(previous_cost_usd=0.5).cost == Decimal("0")  # never negative (a new session's count restarted)


def test_usage_falls_back_to_the_stream_counts():
    t = translator()
    feed(t, start(input_tokens=12, output_tokens=1))
    feed(t, stream({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 5}}))

    assert t.usage(previous_cost_usd=None) == RequestUsage(input_tokens=12, output_tokens=6)
    feed(t, result(usage=None))
    assert t.usage(previous_cost_usd=None).input_tokens == 12


@pytest.mark.parametrize(
    ("fields", "streamed_stop", "expected"),
    [
        ({"stop_reason": "end_turn"}, None, "stop"),
        ({"stop_reason": "max_tokens"}, None, "length"),
        ({"stop_reason": "refusal"}, None, "content_filter"),
        ({"stop_reason": "something_new"}, None, None),
        ({"stop_reason": None}, "max_tokens", "length"),
        ({"stop_reason": None}, None, "stop"),
        ({"stop_reason": "tool_use"}, None, "stop"),  # ended on the StructuredOutput call: complete
        ({"stop_reason": "tool_use", "subtype": "error_max_turns"}, None, "tool_call"),
        ({"stop_reason": "end_turn", "is_error": True}, None, "error"),
    ],
)
def test_finish_reason(fields: dict[str, Any], streamed_stop: str | None, expected: str | None):
    t = translator()
    if streamed_stop:
        feed(t, start(), stream({"type": "message_delta", "delta": {"stop_reason": streamed_stop}, "usage": {}}))
    feed(t, result(**fields))
    assert t.finish_reason() == expected


AGENT_TOOL = f"{PREFIX}probe"


def agent_tools_translator() -> TurnTranslator:
    """A translator whose ``probe`` tool pydantic-ai runs: a reply calling it ends the response."""
    parts = ModelResponsePartsManager(model_request_parameters=ModelRequestParameters())
    return TurnTranslator(parts, tool_prefixes=(PREFIX,), output_tool_names=frozenset({AGENT_TOOL}))


def streamed_call(call_id: str, message_id: str = "msg_1") -> list[StreamEvent]:
    """The stream events of a reply that calls ``probe``, up to its block's end."""
    block = {"type": "tool_use", "id": call_id, "name": AGENT_TOOL, "input": {}}
    return [
        start(message_id),
        stream({"type": "content_block_start", "index": 0, "content_block": block}),
        delta(0, type="input_json_delta", partial_json='{"n": 1}'),
        stream({"type": "content_block_stop", "index": 0}),
    ]


TOOL_USE_DELTA = stream({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}})


def test_a_reply_calling_agent_tools_ends_the_response_at_its_message_delta():
    t = agent_tools_translator()
    feed(t, *streamed_call("toolu_1"), assistant(ToolUseBlock("toolu_1", AGENT_TOOL, {"n": 1})))
    assert t.parked_calls == []

    feed(t, TOOL_USE_DELTA)
    assert t.parked_calls == ["toolu_1"]
    assert not t.in_stream
    assert t.outcome.last_stop_reason == "tool_use"
    assert t.outcome.stream_usage.output_tokens == 3
    [call] = parts_of(t)
    assert (call.tool_name, call.args_as_dict(), call.tool_call_id) == ("probe", {"n": 1}, "toolu_1")

    # The reply's message_stop is read with the next response, which it leaves as it is.
    t.next_response(ModelResponsePartsManager(model_request_parameters=ModelRequestParameters()))
    feed(t, stream({"type": "message_stop"}))
    assert (t.parked_calls, t.in_stream) == ([], False)
    feed(
        t,
        start("msg_2"),
        delta(0, type="text_delta", text="done"),
        assistant(TextBlock("done"), message_id="msg_2"),
        stream({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}),
        stream({"type": "message_stop"}),
    )
    assert parts_of(t) == [TextPart("done")]
    assert t.kept(parts_of(t)) == [TextPart("done")]
    assert t.parked_calls == []


def test_a_reply_whose_call_the_cli_did_not_report_whole_yet_ends_at_its_message_stop():
    t = agent_tools_translator()
    feed(t, *streamed_call("toolu_1"), TOOL_USE_DELTA)
    assert t.parked_calls == []
    assert t.in_stream

    feed(t, assistant(ToolUseBlock("toolu_1", AGENT_TOOL, {"n": 1})), stream({"type": "message_stop"}))
    assert t.parked_calls == ["toolu_1"]


def test_finish_reason_without_a_result_uses_the_stream():
    t = translator()
    feed(t, start(), stream({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}))
    assert t.finish_reason() == "tool_call"


def test_provider_details_are_json_safe():
    t = translator()
    feed(
        t,
        result(
            stop_reason="end_turn",
            terminal_reason="completed",
            total_cost_usd=0.01,
            permission_denials=[{"tool_name": "Bash", "tool_input": {"when": Decimal("1.5")}}],
            model_usage={"claude-test": {"inputTokens": 3, "costUSD": 0.01}},
        ),
    )

    details = t.provider_details()
    assert details == {
        "session_id": "sess-1",
        "num_turns": 1,
        "duration_ms": 10,
        "duration_api_ms": 5,
        "stop_reason": "end_turn",
        "terminal_reason": "completed",
        "subtype": "success",
        "total_cost_usd": 0.01,
        "permission_denials": [{"tool_name": "Bash", "tool_input": {"when": "1.5"}}],
        "model_usage": {"claude-test": {"inputTokens": 3, "costUSD": 0.01}},
    }


def test_cancellation_errors_pass_through_the_error_mapping():
    model = ClaudeCodeModel()
    for error in (GeneratorExit(), asyncio.CancelledError(), KeyboardInterrupt(), CLIInterruptedError("stopped")):
        assert map_error(error, outcome=None, stderr=deque(), model_name=model.model_name) is error


def test_the_stream_suppresses_the_interruption_after_cancel():
    from claudecode_model.model import ClaudeCodeStreamedResponse

    assert ClaudeCodeStreamedResponse.get_stream_cancel_errors(None) == (CLIInterruptedError,)  # type: ignore[arg-type]


class _FakeSession:
    def __init__(self) -> None:
        self.closed = False

    async def abort(self) -> None:
        self.closed = True


class _FakeTurn:
    """Stands in for a CLI turn whose messages are already queued (what a live turn holds mid-stream)."""

    def __init__(self, messages: list[Any]) -> None:
        self.queued = messages
        self.session = _FakeSession()
        self.failed = False
        self.wants_structured_output = False
        self.waiting_calls: list[str] = []
        self.translator = translator()

    async def stop(self) -> None:
        self.failed = True
        await self.session.abort()

    async def messages(self) -> Any:
        for message in self.queued:
            yield message


async def test_no_event_after_close_stream_even_when_called_by_a_wrapper():
    """pydantic-ai's continuation wrapper calls ``close_stream()`` directly, so ``cancelled`` stays False here."""
    from claudecode_model.model import ClaudeCodeStreamedResponse

    turn = _FakeTurn([start(), *[delta(0, type="text_delta", text=word) for word in ("a", "b", "c", "d")]])
    response = ClaudeCodeStreamedResponse(model_request_parameters=ModelRequestParameters(), _turn=turn)  # type: ignore[arg-type]
    seen: list[ModelResponseStreamEvent] = []

    async for event in response._get_event_iterator():
        seen.append(event)
        if len(seen) == 2:
            await response.close_stream()

    assert len(seen) == 2
    assert not response.cancelled
    assert turn.session.closed
    assert turn.failed
    assert parts_of(turn.translator) == [TextPart("ab")]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (delta(0, type="text_delta", text="a"), Delivery.DROP),
        (delta(0, type="thinking_delta", thinking="a"), Delivery.DROP),
        (stream({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}), Delivery.DROP),
        (stream({"type": "content_block_stop", "index": 0}), Delivery.DROP),
        (SystemMessage(subtype="status", data={}), Delivery.DROP),
        (SystemMessage(subtype="session_state_changed", data={}), Delivery.DROP),
        (stream({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use"}}), Delivery.HOLD),
        (delta(1, type="input_json_delta", partial_json="{"), Delivery.HOLD),
        (start(), Delivery.HOLD),
        (stream({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}), Delivery.HOLD),
        (SystemMessage(subtype="init", data={}), Delivery.HOLD),
        (assistant(TextBlock("a")), Delivery.HOLD),
        (stream({"type": "message_stop"}), Delivery.WAKE),
        (stream({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}), Delivery.WAKE),
        (assistant(ToolUseBlock("c1", "mcp__pydantic_tools__probe", {}), parent_tool_use_id="agent_1"), Delivery.WAKE),
        (result(), Delivery.WAKE),
        (SystemMessage(subtype="api_retry", data={"attempt": 1}), Delivery.WAKE),  # its WARNING comes at once
    ],
)
def test_a_request_that_does_not_stream_is_woken_only_by_what_can_end_its_response(message: Any, expected: Delivery):
    assert delivery_unless_streaming(message) is expected


def test_the_clis_retries_are_counted_listed_and_logged(caplog: pytest.LogCaptureFixture):
    t = translator()
    retry = {"attempt": 1, "max_retries": 10, "retry_delay_ms": 600, "error_status": 529, "error": "overloaded"}

    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        feed(t, SystemMessage(subtype="api_retry", data={"type": "system", "subtype": "api_retry", **retry}))
        feed(t, start("msg_1", input_tokens=3), result())

    assert t.provider_details()["api_retries"] == [retry]
    assert t.outcome.api_requests == 2  # the retried one and the answered one
    assert "Claude Code retries an API request (attempt 1 of 10 after overloaded, in 0.6 s)" in caplog.text


def test_the_first_allowed_warning_of_a_limit_window_is_a_warning_then_info(caplog: pytest.LogCaptureFixture):
    from claude_agent_sdk import RateLimitEvent, RateLimitInfo

    from claudecode_model._stream.translator import rate_limit_details

    resets = 4_102_444_800 + id(caplog) % 1000  # a window no other test logged
    info = RateLimitInfo(status="allowed_warning", resets_at=resets, rate_limit_type="five_hour", utilization=0.91)
    event = RateLimitEvent(rate_limit_info=info, uuid="u", session_id="s")

    with caplog.at_level(logging.INFO, logger="claudecode_model"):
        rate_limit_details(event)
        rate_limit_details(event)

    levels = [record.levelname for record in caplog.records if "allowed_warning" in record.getMessage()]
    assert levels == ["WARNING", "INFO"]
    assert "91% used, resets at 2100-01-01T00:" in caplog.records[0].getMessage()
