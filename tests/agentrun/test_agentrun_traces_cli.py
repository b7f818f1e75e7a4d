"""Traces of an agent whose tools pydantic-ai runs, through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    """Spans of the global tracer provider (where the MCP library records), collected in memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def cli_environments() -> list[dict[str, str]]:
    """The environment of every Claude Code CLI process running as a descendant of this process."""
    found: list[dict[str, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"_bundled/claude" not in command or str(os.getpid()).encode() not in _ancestry(entry.name):
            continue
        pairs = [item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item]
        found.append({key.decode(): value.decode(errors="replace") for key, value in pairs})
    return found


def _ancestry(pid: str) -> bytes:
    chain: list[str] = []
    while pid not in ("0", "1"):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        pid = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        chain.append(pid)
    return " ".join(chain).encode()


def where_then_done(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Brain: call the agent's ``where`` tool, then answer ``done``."""
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__where", {})])
    return ModelResponse(parts=[TextPart("done")])


async def run_where(
    agent: Agent[None, str], model: ClaudeCodeModel, exporter: InMemorySpanExporter
) -> list[ReadableSpan]:
    """Run the agent on ``where?`` (closing its model afterwards); the finished spans."""
    try:
        result = await agent.run("where?")
    finally:
        await model.aclose()
    assert result.output == "done"
    return list(exporter.get_finished_spans())


def run_trace(spans: list[ReadableSpan]) -> tuple[int, list[ReadableSpan]]:
    """The trace id of the agent run's span, and the spans in that trace."""
    run_span = next(span for span in spans if span.name.startswith("invoke_agent") or span.name == "agent run")
    trace_id = run_span.context.trace_id
    return trace_id, [span for span in spans if span.context.trace_id == trace_id]


async def test_agent_tools_are_not_builtin_mcp_spans_stay_out_and_the_cli_gets_traceparent(
    claude_backend: OfflineBackend, exporter: InMemorySpanExporter
):
    claude_backend.set_brain(FunctionModel(where_then_done))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    provider = trace.get_tracer_provider()
    instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
    agent = Agent(model, capabilities=[instrumentation])
    seen_env: list[dict[str, str]] = []

    @agent.tool_plain
    def where() -> str:
        seen_env.extend(cli_environments())  # the CLI is alive: it waits for this result
        return "here"

    spans = await run_where(agent, model, exporter)
    trace_id, in_trace = run_trace(spans)
    names = [span.name for span in in_trace]
    # pydantic-ai ran the tool: its own execute_tool span is there ...
    assert any(name.startswith("execute_tool where") or name == "running tool" for name in names), names
    chats = [span for span in in_trace if span.name.startswith("chat")]
    assert len(chats) == 2
    # ... the call is an ordinary tool call, not a built-in one ...
    outputs = json.dumps([dict(span.attributes or {}) for span in chats], default=str)
    assert "where" in outputs
    assert '\\"builtin\\": true' not in outputs
    assert '"builtin": true' not in outputs
    # ... and the MCP library's own spans (tools/list, tools/call ...) are not in the user's trace.
    assert not [span.name for span in in_trace if (span.attributes or {}).get("mcp.method.name")], names
    # The CLI was started with the trace context of the first model request.
    [env] = seen_env
    traceparent = env["TRACEPARENT"]
    assert traceparent.split("-")[1] == format(trace_id, "032x")
    assert traceparent.split("-")[2] == format(chats[0].context.span_id, "016x") or traceparent.split("-")[2] in {
        format(span.context.span_id, "016x") for span in in_trace
    }


async def test_in_loop_tool_spans_join_the_request_trace_and_mcp_spans_stay_out(
    claude_backend: OfflineBackend, exporter: InMemorySpanExporter
):
    claude_backend.set_brain(FunctionModel(where_then_done))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution="cli")
    provider = trace.get_tracer_provider()
    agent = Agent(model, capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))])

    @agent.tool_plain
    def where() -> str:
        return "here"

    spans = await run_where(agent, model, exporter)
    _, in_trace = run_trace(spans)
    names = [span.name for span in in_trace]
    assert any(name.startswith("execute_tool where") or name == "running tool" for name in names), names
    assert not [span.name for span in in_trace if (span.attributes or {}).get("mcp.method.name")], names
