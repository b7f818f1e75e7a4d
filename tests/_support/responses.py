"""Reading a run's responses and stream events: the native tool parts Claude Code's own tools show as, and the
session a run's last response came from, and the details the model puts on each response."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic_ai import AgentRunResult
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    PartStartEvent,
)


def native_parts(response: ModelMessage) -> tuple[list[NativeToolCallPart], list[NativeToolReturnPart]]:
    """The native tool calls and returns of ``response`` (which must be a model response)."""
    assert isinstance(response, ModelResponse)
    calls = [part for part in response.parts if isinstance(part, NativeToolCallPart)]
    returns = [part for part in response.parts if isinstance(part, NativeToolReturnPart)]
    return calls, returns


def started_parts(events: Iterable[object]) -> list[ModelResponsePart]:
    """The parts whose start was streamed, in order."""
    return [event.part for event in events if isinstance(event, PartStartEvent)]


def started_native_kinds(events: Iterable[object], tool_name: str) -> set[type[ModelResponsePart]]:
    """The kinds of native tool part (call, return) streamed for ``tool_name``."""
    return {
        type(part)
        for part in started_parts(events)
        if isinstance(part, NativeToolCallPart | NativeToolReturnPart) and part.tool_name == tool_name
    }


def last_detail(result: AgentRunResult[Any], key: str) -> str:
    """The provider detail ``key`` of a run's last message (``"None"`` when it has none)."""
    last = result.all_messages()[-1]
    details = (last.provider_details if isinstance(last, ModelResponse) else None) or {}
    return str(details.get(key))


def session_of(result: AgentRunResult[Any]) -> str:
    """The id of the CLI session a run's last response came from."""
    return last_detail(result, "session_id")


def source_of(result: AgentRunResult[Any]) -> str:
    """Where a run's session came from (``live``, ``spare``, ``fresh``, ...)."""
    return last_detail(result, "session_source")


def details(message: ModelMessage) -> dict[str, Any]:
    """The ``provider_details`` of a response (the model sets them on every response it returns)."""
    assert isinstance(message, ModelResponse), message
    assert message.provider_details is not None, message
    return message.provider_details
