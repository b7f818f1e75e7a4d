"""Brains for tests: a scripted ``FunctionModel`` and helpers to read what a brain was sent."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

Turn = Sequence[ModelResponsePart] | Callable[[list[ModelMessage]], Sequence[ModelResponsePart]]
"""One answer of a :class:`Script`: fixed parts, or parts computed from the messages sent."""


class Script:
    """A FunctionModel brain that answers with ``turns`` in order and records what it was sent and offered."""

    def __init__(self, *turns: Turn) -> None:
        self.turns = turns
        self.seen: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        turn = self.turns[len(self.seen) - 1]
        return ModelResponse(parts=list(turn(messages) if callable(turn) else turn))

    def returns(self, request_index: int = -1) -> list[ToolReturnPart]:
        """The tool returns the model received in its ``request_index``-th call, in order."""
        last = self.seen[request_index][-1]
        assert isinstance(last, ModelRequest)
        return tool_returns(last)

    def returns_by_name(self, request_index: int = -1) -> dict[str, ToolReturnPart]:
        """The tool returns the model received in its ``request_index``-th call, by tool name."""
        return last_returns(self.seen[request_index])


def echo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers ``echo: <last user text>``, so tests can see what reached the backend."""
    last = messages[-1]
    texts = [p.content for p in last.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
    return ModelResponse(parts=[TextPart(f"echo: {texts[-1] if texts else ''}")])


def tool_returns(*messages: ModelMessage) -> list[ToolReturnPart]:
    """The tool returns ``messages`` carry, in order (a model response carries none)."""
    return [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]


def calls_then_results(
    *calls: tuple[str, dict[str, object]],
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """Brain: make ``calls`` (all in one reply), then answer with every tool result it got back."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if not calls:
            return ModelResponse(parts=[TextPart("nothing to do")])
        if not returns:
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])
        return ModelResponse(parts=[TextPart(" | ".join(str(part.content) for part in returns))])

    return brain


def weather_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the one tool offered (a weather tool) for Paris, then answers with what it returned."""
    returns = tool_returns(*messages)
    if not returns:
        [tool] = info.function_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"city": "Paris"})])
    return ModelResponse(parts=[TextPart(f"The weather: {returns[-1].content}")])


def system_text(messages: list[ModelMessage]) -> str:
    """The system prompts of a conversation, one text."""
    return "\n".join(p.content for m in messages for p in m.parts if isinstance(p, SystemPromptPart))


def subagent_conversation(
    role_prompt: str,
    subagent_calls: Sequence[ModelResponsePart],
    task: dict[str, str],
    *,
    report: Callable[[object], str] = lambda result: f"REPORT: {result}",
    answer: Callable[[object], str] = lambda report: f"The subagent said: {report}",
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """Brain of a conversation with one subagent. The subagent (its system prompt holds ``role_prompt``) makes
    ``subagent_calls``, then reports their first result; the main conversation starts it with ``task`` (the
    ``Agent`` tool's input), then answers with its report."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if role_prompt in system_text(messages):
            if not returns:
                return ModelResponse(parts=list(subagent_calls))
            return ModelResponse(parts=[TextPart(report(returns[0].content))])
        if not returns:
            return ModelResponse(parts=[ToolCallPart("Agent", task)])
        return ModelResponse(parts=[TextPart(answer(returns[0].content))])

    return brain


def calls(*names: str, **args: dict[str, Any]) -> list[ModelResponsePart]:
    """One tool call per name, with the arguments given for that name (``{}`` otherwise)."""
    return [ToolCallPart(name, args.get(name, {})) for name in names]


def last_returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    """The tool returns of the last request, by tool name."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return {part.tool_name: part for part in tool_returns(last)}


def tool_results_in_call_order(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results of the last request, in the order of the calls (parallel calls may finish in any order)."""
    returns = tool_returns(messages[-1])
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


def arguments_for(tool: ToolDefinition) -> dict[str, object]:
    """Arguments that fit a simple schema: ``2`` for every integer parameter, ``"x"`` for any other."""
    properties = tool.parameters_json_schema.get("properties", {})
    return {name: 2 if spec.get("type") == "integer" else "x" for name, spec in properties.items()}


def call_every_tool_then_summarise(
    preamble: str | None = None,
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A brain: first call every offered tool (after ``preamble``, if any), then answer with the tool results."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_results_in_call_order(messages)
        if not returns:
            calls = [ToolCallPart(tool.name, arguments_for(tool)) for tool in info.function_tools]
            return ModelResponse(parts=[*([TextPart(preamble)] if preamble else []), *calls])
        return ModelResponse(parts=[TextPart("Answer: " + " | ".join(str(part.content) for part in returns))])

    return brain


CHAIN = ("one", "two", "three")
CLI_CONTINUATION_PROMPT = "Continue from where you left off."
"""What the CLI sends when it resumes a session whose transcript ends with a tool result."""


def conversation_prompts(messages: list[ModelMessage]) -> list[str | Sequence[UserContent]]:
    """The user's prompts in a conversation, without the CLI's own :data:`CLI_CONTINUATION_PROMPT`."""
    return [
        p.content
        for m in messages
        for p in m.parts
        if isinstance(p, UserPromptPart) and p.content != CLI_CONTINUATION_PROMPT
    ]


class ChainBrain:
    """Calls one, two and three in turn (each with the previous result), then answers with the last result.

    The first API request that carries the result of ``two`` is held until :attr:`release` is set: that is where the
    test kills worker A. Follow-up prompts are answered with how many prompts and tool results the brain saw.
    """

    def __init__(self, hold_for: float) -> None:
        self.hold_for = hold_for
        self.held = threading.Event()
        self.release = threading.Event()
        self._holding = True

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = conversation_prompts(messages)
        returns = tool_returns(*messages)
        if len(prompts) > 1:
            return ModelResponse(parts=[TextPart(f"follow-up after {len(returns)} tool results: {prompts[-1]}")])
        done = [_tool_suffix(p.tool_name) for p in returns]
        if done == ["one", "two"] and self._holding:
            self._holding = False
            self.held.set()
            await asyncio.to_thread(self.release.wait, self.hold_for)
        if len(done) == len(CHAIN):
            return ModelResponse(parts=[TextPart(f"chain result: {returns[-1].content}")])
        step = CHAIN[len(done)]
        [tool] = [t for t in info.function_tools if _tool_suffix(t.name) == step]
        value = int(str(returns[-1].content)) if returns else 1
        return ModelResponse(parts=[ToolCallPart(tool.name, {"n": value})])


def _tool_suffix(name: str) -> str:
    return name.rsplit("__", 1)[-1]
