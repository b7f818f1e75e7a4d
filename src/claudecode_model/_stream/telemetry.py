"""The CLI's metadata on pydantic-ai's model request span.

pydantic-ai's instrumentation opens a ``chat <model>`` span around every model request and keeps it current while the
model runs; other code adds to it through OpenTelemetry's current span. At the end of each CLI turn the model adds
what the CLI reported (session, turns, timings, cost, how the session was reached) as ``claude_code.*`` attributes,
and one ``claude_code.subagent`` event per subagent the turn ran. Without instrumentation (no recording span) this
does nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue
from pydantic_ai.messages import ModelResponsePart, NativeToolCallPart, NativeToolReturnPart

from claudecode_model._history.details import PARENT_TOOL_CALL_ID_KEY, RATE_LIMIT_KEY
from claudecode_model._sessions.subagents import AGENT_TOOL_NAMES

__all__ = ["SESSION_SOURCE_KEY", "SessionSource", "record_turn", "turn_attributes"]

SessionSource = Literal["spare", "rewound", "live", "resume", "fork", "replay", "fresh"]
"""How a turn reached its CLI session: a spare process started ahead for a new conversation, a kept process whose
conversation was rewound to empty for a new one, a kept process continued, a session resumed by id, a session branched
at an earlier point, a replayed history, or a fresh session."""

SESSION_SOURCE_KEY = "session_source"
"""``provider_details`` key: how the turn reached its CLI session (see :data:`SessionSource`)."""

_ATTRIBUTES = {
    "session_id": "claude_code.session_id",
    SESSION_SOURCE_KEY: "claude_code.session_source",
    "num_turns": "claude_code.num_turns",
    "duration_ms": "claude_code.duration_ms",
    "duration_api_ms": "claude_code.duration_api_ms",
    "total_cost_usd": "claude_code.session_cost_usd",
    "stop_reason": "claude_code.stop_reason",
    "terminal_reason": "claude_code.terminal_reason",
    "subtype": "claude_code.result_subtype",
}


def turn_attributes(details: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The span attributes for a turn's ``provider_details`` (values the CLI did not report are left out)."""
    attributes: dict[str, AttributeValue] = {}
    for key, name in _ATTRIBUTES.items():
        value = details.get(key)
        if isinstance(value, str | bool | int | float):
            attributes[name] = value
    rate_limit = details.get(RATE_LIMIT_KEY)
    if isinstance(rate_limit, Mapping):
        for key, value in rate_limit.items():
            if isinstance(value, str | bool | int | float):
                attributes[f"claude_code.rate_limit.{key}"] = value
    denials = details.get("permission_denials")
    if denials:
        attributes["claude_code.permission_denials"] = json.dumps(denials, default=str)
    return attributes


def record_turn(details: Mapping[str, Any], parts: Sequence[ModelResponsePart]) -> None:
    """Add the turn's metadata and subagent runs to the current (model request) span, if it records."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attributes(turn_attributes(details))
    for event, attributes in _subagent_events(parts):
        span.add_event(event, attributes)


def _subagent_events(parts: Sequence[ModelResponsePart]) -> list[tuple[str, dict[str, AttributeValue]]]:
    """One event per subagent run: the starting call, its type, and the tool calls made inside it (names and ids,
    which are the ids of those calls in the span's output messages)."""
    inner: dict[str, list[str]] = {}
    inner_ids: dict[str, list[str]] = {}
    failed: dict[str, int] = {}
    for part in parts:
        parent = (part.provider_details or {}).get(PARENT_TOOL_CALL_ID_KEY) if _is_native(part) else None
        if not isinstance(parent, str):
            continue
        if isinstance(part, NativeToolCallPart):
            inner.setdefault(parent, []).append(part.tool_name)
            inner_ids.setdefault(parent, []).append(part.tool_call_id)
        elif isinstance(part, NativeToolReturnPart) and part.outcome != "success":
            failed[parent] = failed.get(parent, 0) + 1
    events: list[tuple[str, dict[str, AttributeValue]]] = []
    for part in parts:
        if not isinstance(part, NativeToolCallPart) or part.tool_name not in AGENT_TOOL_NAMES:
            continue
        args = part.args_as_dict()
        attributes: dict[str, AttributeValue] = {
            "claude_code.tool_call_id": part.tool_call_id,
            "claude_code.subagent_type": str(args.get("subagent_type") or "general-purpose"),
            "claude_code.description": str(args.get("description") or ""),
            "claude_code.tool_calls": inner.get(part.tool_call_id, []),
            "claude_code.tool_call_ids": inner_ids.get(part.tool_call_id, []),
            "claude_code.failed_tool_calls": failed.get(part.tool_call_id, 0),
        }
        events.append(("claude_code.subagent", attributes))
    return events


def _is_native(part: ModelResponsePart) -> bool:
    return isinstance(part, NativeToolCallPart | NativeToolReturnPart)
