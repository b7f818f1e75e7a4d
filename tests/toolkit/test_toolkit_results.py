"""Tool result kinds and the one rule that turns results and exceptions into what the model sees."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ModelRetry, RunCancelled, ToolFailedError, UserError
from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    TextPart,
    ToolCallPart,
    ToolReturn,
)
from pydantic_ai.toolsets import FunctionToolset

from claudecode_model.toolkit import (
    JsonResult,
    PartsResult,
    TextResult,
    ToolResults,
    ToolResultsToolset,
    error_message,
    stable_json,
    to_tool_content,
)
from tests._support.brains import Script, calls

pytestmark = pytest.mark.filterwarnings("error")

PNG = BinaryContent(b"\x89PNG\r\n\x1a\n", media_type="image/png")

# --- the pure rule ---------------------------------------------------------------------------------------


class Point(BaseModel):
    y: int
    x: int


def test_text_and_str() -> None:
    assert to_tool_content(TextResult("héllo\n")) == "héllo\n"
    assert to_tool_content("plain") == "plain"
    assert to_tool_content(None) == ""


def test_json_is_stable() -> None:
    value = {"b": [1, {"d": 2, "c": 1}], "a": "é", "z": None}
    assert to_tool_content(JsonResult(value)) == '{"a":"é","b":[1,{"c":1,"d":2}],"z":null}'
    assert to_tool_content(JsonResult(value)) == to_tool_content(JsonResult(dict(reversed(value.items()))))
    assert to_tool_content(JsonResult("text")) == '"text"'
    assert to_tool_content(JsonResult(None)) == "null"
    assert to_tool_content(JsonResult(Point(y=2, x=1))) == '{"x":1,"y":2}'
    assert to_tool_content(JsonResult({"when": date(2024, 5, 1)})) == '{"when":"2024-05-01"}'
    assert stable_json([1.5, True]) == "[1.5,true]"


def test_json_refuses_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        to_tool_content(JsonResult({"x": math.nan}))


def test_other_values_are_json() -> None:
    assert to_tool_content({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    assert to_tool_content([3, "x"]) == '[3,"x"]'
    assert to_tool_content(Point(y=1, x=0)) == '{"x":0,"y":1}'


def test_parts() -> None:
    url = ImageUrl("https://example.com/a.png")
    assert to_tool_content(PartsResult(["see", PNG, url])) == ["see", PNG, url]
    assert to_tool_content(PNG) == [PNG]
    assert to_tool_content(["a", PNG, {"k": 1}]) == ["a", PNG, '{"k":1}']
    assert to_tool_content(ToolReturn(return_value=JsonResult({"b": 1, "a": 0}))) == '{"a":0,"b":1}'


@pytest.mark.parametrize(
    "part",
    [BinaryContent(b"ID3", media_type="audio/mpeg"), DocumentUrl("https://example.com/a.pdf"), 42],
)
def test_parts_hold_only_text_and_images(part: Any) -> None:
    with pytest.raises(TypeError, match="PartsResult holds text"):
        PartsResult(["x", part])


def test_error_message() -> None:
    assert error_message(ValueError("boom")) == "Error executing tool: ValueError: boom"
    assert error_message(KeyError()) == "Error executing tool: KeyError"


# --- through an agent ------------------------------------------------------------------------------------


async def test_result_kinds_reach_the_model() -> None:
    script = Script(calls("text", "json", "parts", "mapping", "nothing", "wrapped"), [TextPart("ok")])
    agent = Agent(script.model, capabilities=[ToolResults()])

    @agent.tool_plain
    def text() -> TextResult:
        return TextResult("hello")

    @agent.tool_plain
    def json() -> JsonResult:
        return JsonResult({"b": 2, "a": ["é"]})

    @agent.tool_plain
    def parts() -> PartsResult:
        return PartsResult(["chart:", PNG])

    @agent.tool_plain
    def mapping() -> dict[str, int]:
        return {"y": 1, "x": 2}

    @agent.tool_plain
    def nothing() -> None:
        return None

    @agent.tool_plain
    def wrapped() -> ToolReturn:
        return ToolReturn(return_value=JsonResult([2, 1]), metadata={"mine": True}, content="see above")

    result = await agent.run("go")
    assert result.output == "ok"
    returns = script.returns_by_name()
    assert returns["text"].content == "hello"
    assert returns["json"].content == '{"a":["é"],"b":2}'
    assert returns["parts"].content == ["chart:", PNG]
    assert returns["mapping"].content == '{"x":2,"y":1}'
    assert returns["nothing"].content == ""
    assert returns["wrapped"].content == "[2,1]"
    assert returns["wrapped"].metadata == {"mine": True}
    assert all(part.outcome == "success" for part in returns.values())


async def test_exceptions_become_failed_results_and_the_run_goes_on() -> None:
    script = Script(calls("broken"), [TextPart("recovered")])
    agent = Agent(script.model, capabilities=[ToolResults()])

    @agent.tool_plain
    def broken() -> str:
        raise ValueError("disk on fire")

    result = await agent.run("go")
    assert result.output == "recovered"
    part = script.returns_by_name()["broken"]
    assert part.outcome == "failed"  # sent with the provider's error flag
    assert part.content == "Error executing tool: ValueError: disk on fire"


async def test_without_the_wrapper_an_exception_ends_the_run() -> None:
    agent = Agent(Script(calls("broken"), [TextPart("unreachable")]).model)

    @agent.tool_plain
    def broken() -> str:
        raise ValueError("disk on fire")

    with pytest.raises(ValueError, match="disk on fire"):
        await agent.run("go")


async def test_model_retry_keeps_its_meaning() -> None:
    script = Script(calls("flaky"), calls("flaky"), [TextPart("ok")])
    agent = Agent(script.model, capabilities=[ToolResults()])
    attempts: list[int] = []

    @agent.tool_plain
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelRetry("try again with feeling")
        return "fine"

    await agent.run("go")
    first, second = script.returns_by_name(1)["flaky"], script.returns_by_name(2)["flaky"]
    assert first.outcome == "retried"
    assert "try again with feeling" in first.model_response_str(wrap_if_error=False)
    assert second.outcome == "success"
    assert second.content == "fine"


async def _stop() -> str:
    raise asyncio.CancelledError


def _misconfigured() -> str:
    raise UserError("you forgot something")


@pytest.mark.parametrize(
    ("name", "tool", "error", "match"),
    [
        ("stop", _stop, asyncio.CancelledError, None),
        ("misconfigured", _misconfigured, UserError, "you forgot something"),
    ],
    ids=["cancellation_is_never_converted", "developer_errors_are_not_hidden_from_the_developer"],
)
async def test_is_never_converted(
    name: str, tool: Callable[[], Any], error: type[BaseException], match: str | None
) -> None:
    agent = Agent(Script(calls(name)).model, capabilities=[ToolResults()])
    agent.tool_plain(name=name)(tool)

    with pytest.raises(error, match=match):
        await agent.run("go")


async def test_run_cancellation_from_a_tool_ends_the_run() -> None:
    agent: Agent[None, str] = Agent(Script(calls("stop")).model, capabilities=[ToolResults()])

    @agent.tool
    async def stop(ctx: RunContext[None]) -> str:
        ctx.cancel()
        await asyncio.sleep(10)
        return "never"

    with pytest.raises(RunCancelled):
        await agent.run("go")


async def test_same_rule_through_the_run_tool_manager() -> None:
    """How ClaudeCodeModel runs tools inside Claude Code's loop: ``ctx.tool_manager.handle_call``."""
    seen: dict[str, Any] = {}
    agent: Agent[None, str] = Agent(Script(calls("outer"), [TextPart("ok")]).model, capabilities=[ToolResults()])

    @agent.tool
    async def outer(ctx: RunContext[None]) -> str:
        assert ctx.tool_manager is not None
        seen["json"] = await ctx.tool_manager.handle_call(ToolCallPart("inner", {"n": 2}))
        with pytest.raises(ToolFailedError) as failed:
            await ctx.tool_manager.handle_call(ToolCallPart("broken", {}))
        seen["failed"] = failed.value.tool_failed
        return "done"

    @agent.tool_plain
    def inner(n: int) -> JsonResult:
        return JsonResult({"n": n, "a": 1})

    @agent.tool_plain
    def broken() -> str:
        raise RuntimeError("nope")

    await agent.run("go")
    assert seen["json"] == '{"a":1,"n":2}'
    assert seen["failed"].outcome == "failed"
    assert seen["failed"].content == "Error executing tool: RuntimeError: nope"


async def test_wrapping_a_single_toolset() -> None:
    script = Script(calls("wrapped", "bare"), [TextPart("ok")])
    wrapped_tools = FunctionToolset[None]()
    bare_tools = FunctionToolset[None]()

    @wrapped_tools.tool_plain
    def wrapped() -> JsonResult:
        return JsonResult({"b": 1, "a": 2})

    @bare_tools.tool_plain
    def bare() -> dict[str, int]:
        return {"b": 1, "a": 2}

    agent = Agent(script.model, toolsets=[ToolResultsToolset(wrapped_tools), bare_tools])
    await agent.run("go")
    returns = script.returns_by_name()
    assert returns["wrapped"].content == '{"a":2,"b":1}'
    assert returns["bare"].content == {"b": 1, "a": 2}  # untouched: pydantic-ai renders it itself


def test_wrapper_is_a_dataclass_copy_per_run() -> None:
    toolset = ToolResultsToolset(FunctionToolset[None]())
    assert dataclasses.replace(toolset).cache is None
