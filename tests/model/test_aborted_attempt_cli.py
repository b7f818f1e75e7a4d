"""A recovered failure leaves no trace: what an aborted attempt streamed is not in the response or the history.

When the stream of an answer is cut (the connection drops, or an SSE ``error`` event arrives) the Claude Code CLI
recovers by asking again. End to end through the real CLI and the offline backend, for ``run`` and ``run_stream``;
each test checks what the backend received too.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any, Literal

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import Failure, OfflineBackend, RecordedRequest

pytestmark = pytest.mark.cli


CUT_TEXT = "this answer will be cut short"
"""Streamed in chunks of 8 characters: two deltas reach the client, ``this answer will``."""

Ending = Literal["drop", "sse_error"]


def conversation(request: RecordedRequest) -> list[str]:
    lines: list[str] = []
    for message in request.messages:
        if isinstance(message, ModelRequest):
            lines.extend(f"user: {p.content}" for p in message.parts if isinstance(p, UserPromptPart))
        else:
            lines.extend(f"assistant: {p.content}" for p in message.parts if isinstance(p, TextPart))
    return lines


def response_texts(messages: list[ModelMessage]) -> list[str]:
    return [p.content for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, TextPart)]


def assert_no_trace(messages: list[ModelMessage]) -> None:
    for message in messages:
        if isinstance(message, ModelResponse):
            assert not [p for p in message.parts if isinstance(p, ToolCallPart | NativeToolCallPart | ThinkingPart)]
            for part in message.parts:
                assert not (isinstance(part, TextPart) and "this ans" in part.content), part


class StreamedSeen:
    """An ``event_stream_handler`` that records every text, thinking and tool-argument delta it was given."""

    def __init__(self) -> None:
        self.chunks: list[str] = []

    async def __call__(self, ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for event in events:
            match event:
                case PartStartEvent(part=TextPart(content=text) | ThinkingPart(content=text)):
                    self.chunks.append(text)
                case PartStartEvent(part=ToolCallPart() | NativeToolCallPart() as call):
                    self.chunks.append(f"call {call.tool_name}")
                case PartDeltaEvent():
                    delta = event.delta
                    self.chunks.append(str(getattr(delta, "content_delta", None) or getattr(delta, "args_delta", "")))
                case _:
                    pass

    @property
    def text(self) -> str:
        return "".join(self.chunks)


async def _follow_up_sees_only_the_recovered_answer(
    agent: Agent[None, str], messages: list[ModelMessage], backend: OfflineBackend
) -> None:
    backend.set_brain(["and next"])
    follow_up = await agent.run("next", message_history=messages)
    assert follow_up.output == "and next"
    assert conversation(backend.requests[-1]) == ["user: hello", "assistant: recovered fine", "user: next"]


@pytest.mark.parametrize("ending", ["drop", "sse_error"])
async def test_run_discards_the_text_of_an_aborted_attempt(
    ending: Ending, model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain([Failure.cut(CUT_TEXT, after_deltas=2, ending=ending), "recovered fine"])
    agent = Agent(model)
    seen = StreamedSeen()

    result = await agent.run("hello", event_stream_handler=seen)

    assert [r.stream for r in claude_backend.requests] == [True, False]  # the CLI retried without streaming
    assert seen.text.startswith("this answer will")  # the aborted attempt did reach the client
    assert result.output == "recovered fine"
    assert result.all_messages()[-1].provider_details["aborted_attempts"] == 1  # type: ignore[union-attr,index]
    assert response_texts(result.all_messages()) == ["recovered fine"]
    assert_no_trace(result.all_messages())
    await _follow_up_sees_only_the_recovered_answer(agent, result.all_messages(), claude_backend)


@pytest.mark.parametrize("ending", ["drop", "sse_error"])
async def test_run_stream_discards_the_text_of_an_aborted_attempt(
    ending: Ending, model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain([Failure.cut(CUT_TEXT, after_deltas=2, ending=ending), "recovered fine"])
    agent = Agent(model)

    async with agent.run_stream("hello") as stream:
        deltas = [text async for text in stream.stream_text(delta=True, debounce_by=None)]
        messages = stream.all_messages()
        final = stream.response
        output = await stream.get_output()

    # The documented rule: deltas already delivered are not taken back; the response, the output and the
    # history hold the recovered answer only.
    assert "".join(deltas).startswith("this answer will")
    assert output == "recovered fine"
    assert response_texts([final]) == ["recovered fine"]
    assert response_texts(messages) == ["recovered fine"]
    assert_no_trace(messages)
    await _follow_up_sees_only_the_recovered_answer(agent, messages, claude_backend)


def _cut_tool_call() -> ModelResponse:
    """An answer whose preamble is complete when its tool call is cut part-way through the arguments."""
    return ModelResponse(parts=[TextPart("let me call"), ToolCallPart("lookup", {"query": "a long argument value"})])


async def test_run_discards_a_tool_call_cut_part_way(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    # 2 text deltas ("let me c", "all"), then the tool call's first argument delta, then the connection drops.
    claude_backend.set_brain([Failure.cut(_cut_tool_call(), after_deltas=3), "recovered fine"])
    agent = Agent(model)
    seen = StreamedSeen()

    result = await agent.run("hello", event_stream_handler=seen)

    assert len(claude_backend.requests) == 2
    assert "let me call" in seen.text  # the aborted attempt did reach the client, tool call included
    assert "call lookup" in seen.text
    assert result.output == "recovered fine"
    assert response_texts(result.all_messages()) == ["recovered fine"]
    assert_no_trace(result.all_messages())
    for part in result.all_messages()[-1].parts:
        assert "let me call" not in str(getattr(part, "content", ""))
    await _follow_up_sees_only_the_recovered_answer(agent, result.all_messages(), claude_backend)


async def test_run_stream_discards_a_tool_call_cut_part_way(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain([Failure.cut(_cut_tool_call(), after_deltas=3), "recovered fine"])
    agent = Agent(model)

    async with agent.run_stream("hello") as stream:
        snapshots = [response async for response in stream.stream_response(debounce_by=None)]
        output = await stream.get_output()
        messages = stream.all_messages()

    assert any("let me call" in response_texts([snapshot]) for snapshot in snapshots)  # seen while streaming
    assert response_texts([snapshots[-1]]) == ["recovered fine"]  # later snapshots leave the cut attempt out
    assert output == "recovered fine"
    assert response_texts(messages) == ["recovered fine"]
    assert_no_trace(messages)
    await _follow_up_sees_only_the_recovered_answer(agent, messages, claude_backend)


async def test_thinking_of_an_aborted_attempt_is_discarded(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    partial = ModelResponse(parts=[ThinkingPart("pondering deeply about it", signature="sig"), TextPart("the answer")])
    claude_backend.set_brain([Failure.cut(partial, after_deltas=2), "recovered fine"])
    agent = Agent(model, model_settings={"thinking": "high"})
    seen = StreamedSeen()

    result = await agent.run("hello", event_stream_handler=seen)

    assert "pondering" in seen.text
    assert result.output == "recovered fine"
    assert_no_trace(result.all_messages())
    assert response_texts(result.all_messages()) == ["recovered fine"]
