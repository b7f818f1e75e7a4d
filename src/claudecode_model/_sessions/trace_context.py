"""Where the CLI session's work sits in the user's OpenTelemetry trace.

Two rules:

* The MCP library serving the agent's tools to the CLI opens spans of its own (``tools/list``, ``tools/call ...``)
  in the task that owns the CLI session. That task outlives the request that started it, so it must not inherit the
  request's span: it runs in a context whose current span is a non-sampled placeholder, which keeps those spans out
  of the user's trace (samplers that follow their parent drop them; pydantic-ai's instrumentation already reports
  each tool call as its own ``execute_tool`` span).
* The CLI process gets ``TRACEPARENT`` (and ``TRACESTATE``) of the span current when it starts (the model request),
  so that Claude Code's own telemetry, when enabled, joins the trace.
"""

from __future__ import annotations

import contextvars
import random

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["traceparent_env", "untraced_context"]

_PROPAGATOR = TraceContextTextMapPropagator()


def untraced_context() -> contextvars.Context:
    """A fresh context (nothing of the caller's) whose current OpenTelemetry span is a non-sampled placeholder."""
    placeholder = trace.NonRecordingSpan(
        trace.SpanContext(
            trace_id=random.getrandbits(128) or 1,
            span_id=random.getrandbits(64) or 1,
            is_remote=False,
            trace_flags=trace.TraceFlags(trace.TraceFlags.DEFAULT),
        )
    )
    fresh = contextvars.Context()
    fresh.run(otel_context.attach, trace.set_span_in_context(placeholder))
    return fresh


def traceparent_env() -> dict[str, str]:
    """``TRACEPARENT`` / ``TRACESTATE`` of the current span for a child process (empty without a valid span)."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    env = {"TRACEPARENT": carrier["traceparent"]} if "traceparent" in carrier else {}
    if env and carrier.get("tracestate"):
        env["TRACESTATE"] = carrier["tracestate"]
    return env
