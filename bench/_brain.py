"""The offline backend's brain for the benchmarks: zero think time, behaviour chosen by the prompt.

A prompt is ``key=value`` words. ``calls=N`` makes the brain call the first offered tool N times, one call per
response (``{"n": 0}``, ``{"n": 1}``, ...), then answer ``done <id>: <tool results>``; ``id=X`` names the run
(so concurrent runs can be told apart); ``long=1`` appends a long text, which the backend streams in many chunks.
"""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo

LONG_TEXT = " ".join(f"word{index}" for index in range(40))
"""About 270 characters: with the backend's 8-character chunks, over 30 text deltas."""


def prompt(*, calls: int = 0, run_id: str = "-", long: bool = False) -> str:
    """The prompt that asks the brain for this behaviour."""
    return f"calls={calls} id={run_id}" + (" long=1" if long else "")


def expected_answer(*, calls: int, run_id: str = "-", results: list[str] | None = None, long: bool = False) -> str:
    """The final text the brain gives for :func:`prompt` when the tool returns ``results``."""
    returned = results if results is not None else [f"p{index}" for index in range(calls)]
    text = f"done {run_id}: {' '.join(returned)}".rstrip()
    return f"{text} {LONG_TEXT}" if long else text


def _current_turn(messages: list[ModelMessage]) -> tuple[dict[str, str], list[str]]:
    """The latest user prompt (as key=value words) and the tool results that came after it."""
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        results[:0] = [str(part.content) for part in message.parts if isinstance(part, ToolReturnPart)]
        prompts = [part.content for part in message.parts if isinstance(part, UserPromptPart)]
        if prompts:
            words = str(prompts[-1]).split()
            return dict(word.split("=", 1) for word in words if "=" in word), results
    return {}, results


def bench_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answer one request of a benchmark run (see the module docstring)."""
    spec, results = _current_turn(messages)
    calls = int(spec.get("calls", "0"))
    if len(results) < calls:
        if not info.function_tools:
            return ModelResponse(parts=[TextPart("no tool was offered")])
        tool = info.function_tools[0]
        return ModelResponse(parts=[ToolCallPart(tool.name, {"n": len(results)})])
    text = f"done {spec.get('id', '-')}: {' '.join(results)}".rstrip()
    if spec.get("long") == "1":
        text = f"{text} {LONG_TEXT}"
    return ModelResponse(parts=[TextPart(text)])
