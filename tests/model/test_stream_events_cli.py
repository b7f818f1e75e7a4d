"""True token streaming through the real Claude Code CLI: deltas, every agent streaming API, the final answer."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import pytest
from claude_agent_sdk.types import StreamEvent, SystemMessage
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    AgentStreamEvent,
    FinalResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ModelResponseStreamEvent,
    NativeToolCallPart,
    NativeToolReturnPart,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.run import AgentRunResultEvent
from pydantic_ai.usage import RequestUsage

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

PREAMBLE = "Let me check the weather service first."
ANSWER = "The weather in Paris is sunny, twenty-one degrees, with a light breeze from the west."
THOUGHT = "The user wants the weather; I should call the tool before answering."
LONG_TEXT = "Streaming works when every one of these words arrives as its own small delta."


def preamble_tool_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Brain: thinking, a preamble and a tool call; once the tool answered, the final answer."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if not returns:
        [tool] = info.function_tools
        return ModelResponse(
            parts=[
                ThinkingPart(THOUGHT, signature="sig-weather"),
                TextPart(PREAMBLE),
                ToolCallPart(tool.name, {"city": "Paris", "details": "temperature, wind and sky"}),
            ],
            usage=RequestUsage(input_tokens=120, output_tokens=40),
        )
    return ModelResponse(parts=[TextPart(ANSWER)], usage=RequestUsage(input_tokens=180, output_tokens=25))


def weather_agent(model: ClaudeCodeModel) -> Agent[None, str]:
    agent = Agent(model)

    @agent.tool_plain
    def weather(city: str, details: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny ({details})"

    return agent


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    claude_backend.set_brain(FunctionModel(preamble_tool_answer))
    claude_backend.text_chunk_size = 6
    claude_backend.delta_delay = 0.002  # the backend streams slowly: deltas are spread over the response
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 60}, tool_execution="cli")
    yield model
    await model.aclose()


def text_deltas(events: list[Any]) -> list[str]:
    return [
        e.delta.content_delta for e in events if isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta)
    ]


def final_response(messages: list[ModelMessage]) -> ModelResponse:
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    return response


async def test_request_stream_yields_text_deltas_while_the_response_is_unfinished(claude_backend: OfflineBackend):
    claude_backend.set_brain(LONG_TEXT)
    claude_backend.text_chunk_size = 5
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 60}, tool_execution="cli")
    # The backend stops after 4 deltas until the test lets it go on: whatever arrives before, arrived mid-response.
    gate = claude_backend.hold_next_stream(after_deltas=4)
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("stream please")])]
    before_release: list[ModelResponseStreamEvent] = []
    after_release: list[ModelResponseStreamEvent] = []
    try:
        async with model.request_stream(messages, None, ModelRequestParameters()) as stream:
            async for event in stream:
                if gate.is_set():
                    after_release.append(event)
                    continue
                before_release.append(event)
                if len(text_deltas(before_release)) == 3:
                    assert stream.get().state == "incomplete"
                    gate.set()
        response = stream.get()
    finally:
        await model.aclose()

    assert isinstance(before_release[0], PartStartEvent)
    assert before_release[0].part == TextPart("Strea")
    assert text_deltas(before_release) == ["ming ", "works", " when"]
    assert len(text_deltas(after_release)) >= 10
    assert not any(isinstance(e, FinalResultEvent) for e in after_release)  # the final-result marker came first
    assert "".join([before_release[0].part.content, *text_deltas(before_release + after_release)]) == LONG_TEXT
    assert response.parts == [TextPart(LONG_TEXT)]
    assert response.state == "complete"
    assert response.finish_reason == "stop"


async def test_thinking_text_and_tool_input_stream_as_deltas(model: ClaudeCodeModel):
    agent = weather_agent(model)

    async with agent.run_stream_events("What is the weather in Paris?") as stream:
        events: list[AgentStreamEvent | AgentRunResultEvent[str]] = [event async for event in stream]

    result_events = [e for e in events if isinstance(e, AgentRunResultEvent)]
    assert [e.result.output for e in result_events] == [ANSWER]
    assert events[-1] is result_events[0]
    before_end = events[:-1]
    thinking = [e.delta for e in before_end if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ThinkingPartDelta)]
    assert len([delta for delta in thinking if delta.content_delta]) >= 5
    assert [delta.signature_delta for delta in thinking if delta.signature_delta] == ["sig-weather"]
    args = [e.delta for e in before_end if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)]
    assert len(args) >= 2
    assert "".join(str(delta.args_delta) for delta in args) == '{"city":"Paris","details":"temperature, wind and sky"}'
    assert len(text_deltas(before_end)) >= 10
    starts = [e.part for e in before_end if isinstance(e, PartStartEvent)]
    assert [type(part) for part in starts] == [
        ThinkingPart,
        TextPart,
        NativeToolCallPart,
        NativeToolReturnPart,
        TextPart,
    ]
    result = result_events[0].result
    response = final_response(result.all_messages())
    [thought] = [part for part in response.parts if isinstance(part, ThinkingPart)]
    assert thought == ThinkingPart(THOUGHT, signature="sig-weather", provider_name="claude-code")


async def test_run_stream_returns_the_final_answer_not_the_preamble(model: ClaudeCodeModel):
    agent = weather_agent(model)

    async with agent.run_stream("What is the weather in Paris?") as stream:
        outputs = [output async for output in stream.stream_output(debounce_by=None)]
        output = await stream.get_output()
    messages = stream.all_messages()

    assert output == ANSWER
    assert outputs[-1] == ANSWER
    response = final_response(messages)
    assert [type(part) for part in response.parts] == [
        ThinkingPart,
        TextPart,
        NativeToolCallPart,
        NativeToolReturnPart,
        TextPart,
    ]
    assert [part.content for part in response.parts if isinstance(part, TextPart)] == [PREAMBLE, ANSWER]
    # The whole turn is one pydantic-ai request: Claude Code ran the tool inside its own loop.
    assert [message.kind for message in messages] == ["request", "response"]


async def test_run_stream_text_shows_the_preamble_apart_from_the_answer(model: ClaudeCodeModel):
    agent = weather_agent(model)

    async with agent.run_stream("What is the weather in Paris?") as stream:
        texts = [text async for text in stream.stream_text(debounce_by=None)]
        deltas_output = await stream.get_output()

    # Like any pydantic-ai model with provider-executed tools, the text streams in full, the output is the answer.
    assert texts[-1] == f"{PREAMBLE}\n\n{ANSWER}"
    assert deltas_output == ANSWER


async def test_run_stream_events_yields_several_text_deltas_before_the_result(model: ClaudeCodeModel):
    agent = weather_agent(model)

    async with agent.run_stream_events("What is the weather in Paris?") as stream:
        events = [event async for event in stream]

    final_index = next(i for i, e in enumerate(events) if isinstance(e, AgentRunResultEvent))
    answer_start = next(
        i for i, e in enumerate(events) if isinstance(e, PartStartEvent) and e.part == TextPart(ANSWER[:6])
    )
    answer_deltas = text_deltas(events[answer_start:final_index])
    assert len(answer_deltas) >= 10
    assert ANSWER[:6] + "".join(answer_deltas) == ANSWER
    assert final_index == len(events) - 1


async def test_iter_streams_each_model_request_node(model: ClaudeCodeModel):
    agent = weather_agent(model)
    model_events: list[AgentStreamEvent] = []
    tool_events: list[Any] = []
    node_kinds: list[str] = []

    async with agent.iter("What is the weather in Paris?") as run:
        async for node in run:
            node_kinds.append(type(node).__name__)
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as request_stream:
                    model_events.extend([event async for event in request_stream])
            elif Agent.is_call_tools_node(node):
                async with node.stream(run.ctx) as handle_stream:
                    tool_events.extend([event async for event in handle_stream])
    assert run.result is not None

    assert run.result.output == ANSWER
    assert node_kinds == ["UserPromptNode", "ModelRequestNode", "CallToolsNode", "End"]
    assert len(text_deltas(model_events)) >= 10
    assert any(isinstance(e, PartStartEvent) and isinstance(e.part, NativeToolCallPart) for e in model_events)
    assert tool_events == []  # Claude Code already ran the tool: pydantic-ai has nothing left to call


async def test_run_with_event_stream_handler_sees_the_deltas(model: ClaudeCodeModel):
    agent = weather_agent(model)
    seen: list[AgentStreamEvent] = []

    async def handler(ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for event in events:
            seen.append(event)

    result = await agent.run("What is the weather in Paris?", event_stream_handler=handler)

    assert result.output == ANSWER
    assert len(text_deltas(seen)) >= 10
    assert sum(isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta) for e in seen) >= 2
    returns = [e.part for e in seen if isinstance(e, PartStartEvent) and isinstance(e.part, NativeToolReturnPart)]
    assert [part.content for part in returns] == ["Paris: sunny (temperature, wind and sky)"]


_VOLATILE = {"timestamp", "tool_call_id", "provider_response_id", "run_id", "conversation_id"}


def comparable(messages: list[ModelMessage]) -> Any:
    """Messages as plain data without what differs between two runs: timestamps, ids, provider detail values."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: sorted(item) if key == "provider_details" and isinstance(item, dict) else scrub(item)
                for key, item in value.items()
                if key not in _VOLATILE
            }
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return scrub(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


async def test_streaming_and_non_streaming_produce_the_same_messages(model: ClaudeCodeModel):
    agent = weather_agent(model)
    prompt = "What is the weather in Paris?"

    plain = await agent.run(prompt)
    async with agent.run_stream(prompt) as stream:
        await stream.get_output()
    streamed_messages = stream.all_messages()
    async with agent.run_stream_events(prompt) as events:
        [event_result] = [e async for e in events if isinstance(e, AgentRunResultEvent)]

    expected = comparable(plain.all_messages())
    assert comparable(streamed_messages) == expected
    assert comparable(event_result.result.all_messages()) == expected
    plain_response = final_response(plain.all_messages())
    streamed_response = final_response(streamed_messages)
    assert plain_response.usage == streamed_response.usage
    assert plain_response.usage.input_tokens == 300
    assert plain_response.usage.output_tokens == 65
    assert plain_response.finish_reason == streamed_response.finish_reason == "stop"
    assert (plain_response.provider_details or {}).keys() == (streamed_response.provider_details or {}).keys()
    details = plain_response.provider_details or {}
    assert {"session_id", "num_turns", "stop_reason", "history_digest"} <= details.keys()


async def test_only_a_streaming_request_receives_the_content_events(claude_backend: OfflineBackend):
    """``request()`` builds its parts from whole messages: the CLI's content-block events and progress notices are
    dropped as they arrive (the message-level events and the init message stay); a stream of raw messages keeps
    everything."""
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(LONG_TEXT)])))
    claude_backend.text_chunk_size = 6
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        whole = await model.request_with_metadata([ModelRequest(parts=[UserPromptPart("whole, please")])])
        streamed = [m async for m in model.stream_messages([ModelRequest(parts=[UserPromptPart("streamed")])])]
    finally:
        await model.aclose()

    def event_kinds(messages: list[Any]) -> list[str]:
        return [message.event["type"] for message in messages if isinstance(message, StreamEvent)]

    def system_subtypes(messages: list[Any]) -> set[str]:
        return {message.subtype for message in messages if type(message) is SystemMessage}

    assert whole.response.parts == [TextPart(LONG_TEXT)]
    assert event_kinds(whole.messages) == ["message_start", "message_delta", "message_stop"]
    assert system_subtypes(whole.messages) == {"init"}
    assert event_kinds(streamed).count("content_block_delta") >= 10
    assert {"content_block_start", "content_block_stop"} <= set(event_kinds(streamed))
    assert {"init", "status"} <= system_subtypes(streamed)


async def test_a_profile_that_restores_special_tokens_keeps_the_streamed_path(claude_backend: OfflineBackend):
    """pydantic-ai restores special tokens in the parts of a streamed response: a model whose profile asks for it
    answers ``request_with_metadata()`` through ``request_stream()``, content events and all."""
    from claudecode_model._profile import default_profile

    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(LONG_TEXT)])))
    claude_backend.text_chunk_size = 6
    profile: ModelProfile = {**default_profile(None), "may_tokenize_special_tokens_in_content": True}
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, profile=profile)
    try:
        whole = await model.request_with_metadata([ModelRequest(parts=[UserPromptPart("whole, please")])])
    finally:
        await model.aclose()

    assert whole.response.parts == [TextPart(LONG_TEXT)]
    deltas = [m for m in whole.messages if isinstance(m, StreamEvent) and m.event["type"] == "content_block_delta"]
    assert len(deltas) >= 10
