"""Helpers for the offline backend's brains shared by test folders."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, RetryPromptPart, ToolCallPart, ToolReturnPart


def tool_results_in_call_order(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results of the last request, in the order of the calls (parallel calls may finish in any order)."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if len(messages) < 2 or not returns:
        return returns
    order = [part.tool_call_id for part in messages[-2].parts if isinstance(part, ToolCallPart)]
    return sorted(
        returns, key=lambda part: order.index(part.tool_call_id) if part.tool_call_id in order else len(order)
    )


def has_tool_results(messages: list[ModelMessage]) -> bool:
    """Whether the last request carries tool results (successful or failed): the tools have answered."""
    last = messages[-1]
    return isinstance(last, ModelRequest) and any(
        isinstance(part, ToolReturnPart | RetryPromptPart) for part in last.parts
    )
