"""The CLI's metadata on pydantic-ai's model request spans, seen with an in-memory OpenTelemetry exporter."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    ModelResponse,
    NativeToolCallPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend
from tests._support.brains import subagent_conversation
from tests._support.responses import details

pytestmark = pytest.mark.cli


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


def _instrumented(exporter: InMemorySpanExporter) -> list[Instrumentation]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]


def _chat_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]


async def test_each_request_span_carries_the_cli_metadata(
    claude_backend: OfflineBackend, exporter: InMemorySpanExporter
):
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("hi there")])))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    agent = Agent(model, capabilities=_instrumented(exporter))
    try:
        first = await agent.run("hello")
        async with agent.run_stream("again", message_history=first.all_messages()) as streamed:
            await streamed.get_output()
        history = streamed.all_messages()
    finally:
        await model.aclose()
    other = ClaudeCodeModel(env=claude_backend.cli_env())
    try:
        await Agent(other, capabilities=_instrumented(exporter)).run("once more", message_history=history)
    finally:
        await other.aclose()

    spans = _chat_spans(exporter)
    assert len(spans) == 3
    sources = [span.attributes["claude_code.session_source"] for span in spans if span.attributes]
    assert sources == ["fresh", "live", "resume"]
    session_ids = {span.attributes["claude_code.session_id"] for span in spans if span.attributes}
    [session_id] = session_ids  # one CLI session throughout
    first_response = first.all_messages()[-1]
    assert isinstance(first_response, ModelResponse)
    assert session_id == (first_response.provider_details or {})["session_id"]
    costs: list[float] = []
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes["claude_code.num_turns"] == 1
        assert isinstance(attributes["claude_code.duration_api_ms"], int)
        assert isinstance(attributes["claude_code.duration_ms"], int)
        session_cost = attributes["claude_code.session_cost_usd"]
        assert isinstance(session_cost, float)
        costs.append(session_cost)
        assert attributes["claude_code.terminal_reason"] == "completed"
        request_cost = attributes["operation.cost"]  # pydantic-ai's own: this request's cost
        assert isinstance(request_cost, int | float)
        assert request_cost > 0
        assert attributes["gen_ai.system"] == "claude-code" or attributes.get("gen_ai.provider.name") == "claude-code"
    assert costs[0] < costs[1] < costs[2]  # cumulative over the session


async def test_a_subagent_run_is_an_event_of_the_request_span(
    claude_backend: OfflineBackend, exporter: InMemorySpanExporter, tmp_path: Path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the treasure is under the oak\n")
    reader = "You are the note reader."

    brain = subagent_conversation(
        reader,
        [ToolCallPart("Read", {"file_path": str(notes)})],
        {"description": "Read notes", "prompt": "Read the notes", "subagent_type": "note-reader"},
        report=lambda _: "REPORT: done",
        answer=lambda _: "ok",
    )
    claude_backend.set_brain(FunctionModel(brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    settings: ClaudeCodeModelSettings = {
        "claude_code_cwd": tmp_path,
        "claude_code_agents": {"note-reader": {"description": "Reads notes", "prompt": reader, "tools": ["Read"]}},
    }
    try:
        result = await Agent(model, capabilities=_instrumented(exporter), model_settings=settings).run("go")
    finally:
        await model.aclose()

    [span] = _chat_spans(exporter)
    [event] = [event for event in span.events if event.name == "claude_code.subagent"]
    attributes = dict(event.attributes or {})
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    agent_call = response.parts[0]
    assert attributes["claude_code.tool_call_id"] == getattr(agent_call, "tool_call_id", None)
    assert attributes["claude_code.subagent_type"] == "note-reader"
    tool_calls = attributes["claude_code.tool_calls"]
    assert isinstance(tool_calls, Sequence)
    assert tuple(tool_calls) == ("Read",)
    read_call = next(p for p in response.parts if isinstance(p, NativeToolCallPart) and p.tool_name == "Read")
    tool_call_ids = attributes["claude_code.tool_call_ids"]
    assert isinstance(tool_call_ids, Sequence)
    assert tuple(tool_call_ids) == (read_call.tool_call_id,)
    output_messages = str((span.attributes or {}).get("gen_ai.output.messages"))
    assert read_call.tool_call_id in output_messages
    assert '"name":"Read"' in output_messages.replace(" ", "")


async def test_without_instrumentation_nothing_is_recorded(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("plain")])))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    try:
        result = await Agent(model).run("hello")
    finally:
        await model.aclose()

    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert (response.provider_details or {})["session_source"] == "fresh"


async def test_a_rate_limit_warning_reaches_the_details_the_span_and_the_log(
    claude_backend: OfflineBackend, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
):
    resets = int(time.time()) + 3600
    claude_backend.answer_headers = {
        "anthropic-ratelimit-unified-status": "allowed_warning",
        "anthropic-ratelimit-unified-reset": str(resets),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-status": "allowed_warning",
        "anthropic-ratelimit-unified-5h-reset": str(resets),
        "anthropic-ratelimit-unified-5h-utilization": "0.91",
        "anthropic-ratelimit-unified-5h-surpassed-threshold": "0.9",
    }
    env = {name: value for name, value in claude_backend.cli_env().items() if name != "ANTHROPIC_API_KEY"}
    model = ClaudeCodeModel(env={**env, "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-offline-test"})
    try:
        with caplog.at_level(logging.WARNING, logger="claudecode_model"):
            result = await Agent(model, capabilities=_instrumented(exporter)).run("hello")
    finally:
        await model.aclose()

    state = details(result.response)["rate_limit"]
    assert state["status"] == "allowed_warning"
    assert state["type"] == "five_hour"
    assert state["utilization"] == pytest.approx(0.91)
    assert state["resets_at"] == resets
    [span] = _chat_spans(exporter)
    assert span.attributes is not None
    assert span.attributes["claude_code.rate_limit.status"] == "allowed_warning"
    assert span.attributes["claude_code.rate_limit.utilization"] == pytest.approx(0.91)
    assert "rate limit five_hour: allowed_warning (91% used" in caplog.text
