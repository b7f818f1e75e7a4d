"""Seed 000, User Story 2: converting one pydantic-ai Tool with convert_tool()."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import threading

import pytest
from pydantic import BaseModel
from pydantic_ai import BinaryContent, RunContext, Tool

from claudecode_model.tool_converter import (
    McpResponse,
    _create_async_handler,
    _format_return_value_as_mcp,
    convert_tool,
)
from tests._support.mcp import first_text


class Point(BaseModel):
    x: int
    y: int


def search(query: str, limit: int = 3) -> list[str]:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results at most.
    """
    return [f"{query}-{i}" for i in range(limit)]


async def test_convert_tool_keeps_name_description_and_input_schema() -> None:
    tool = Tool(search)

    converted = convert_tool(tool)

    assert converted.name == "search"
    assert converted.description == tool.description == "Search the catalogue."
    assert converted.input_schema == tool.tool_def.parameters_json_schema
    assert converted.input_schema["properties"]["query"] == {
        "description": "What to look for.",
        "type": "string",
    }
    assert converted.annotations is None
    assert convert_tool(tool, read_only=True).annotations is not None


async def test_custom_tool_name_and_description_win() -> None:
    converted = convert_tool(Tool(search, name="find", description="Find things."))

    assert (converted.name, converted.description) == ("find", "Find things.")


async def test_sync_function_becomes_a_working_async_handler_run_in_a_thread() -> None:
    threads: list[int] = []

    def record(value: int) -> int:
        threads.append(threading.get_ident())
        return value * 2

    handler = _create_async_handler(Tool(record))

    assert asyncio.iscoroutinefunction(handler)
    assert await handler({"value": 21}) == {"content": [{"type": "text", "text": "42"}], "isError": False}
    assert threads
    assert threads[0] != threading.get_ident()


async def test_async_function_runs_on_the_event_loop() -> None:
    threads: list[int] = []

    async def record(value: int) -> int:
        threads.append(threading.get_ident())
        return value + 1

    handler = _create_async_handler(Tool(record))

    assert await handler({"value": 1}) == {"content": [{"type": "text", "text": "2"}], "isError": False}
    assert threads == [threading.get_ident()]


async def test_arguments_are_validated_and_converted_like_pydantic_ai_does() -> None:
    def norm(p: Point) -> int:
        return abs(p.x) + abs(p.y)

    handler = _create_async_handler(Tool(norm))

    assert first_text(await handler({"x": "3", "y": -4})) == "7"
    bad = await handler({"x": "three"})
    assert bad["isError"] is True
    assert "Invalid arguments for tool 'norm'" in first_text(bad)
    assert '"loc":["x"]' in first_text(bad)


def test_takes_ctx_without_deps_context_raises_not_implemented() -> None:
    def needs_ctx(ctx: RunContext[int], x: int) -> int:
        return ctx.deps + x

    tool = Tool(needs_ctx)
    assert tool.takes_ctx

    with pytest.raises(NotImplementedError, match="convert_tool_with_deps"):
        _create_async_handler(tool)
    with pytest.raises(NotImplementedError):
        convert_tool(tool)


def test_dict_return_is_json_text() -> None:
    response = _format_return_value_as_mcp({"city": "Zürich", "temps": [1.5, None], "ok": True})

    assert response == {
        "content": [{"type": "text", "text": '{"city":"Zürich","temps":[1.5,null],"ok":true}'}],
        "isError": False,
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ([1, "a"], '[1,"a"]'),
        (3, "3"),
        (2.5, "2.5"),
        (False, "false"),
        ({"b": 1, "a": 2}, '{"b":1,"a":2}'),  # insertion order, keys are not sorted
        (datetime.date(2026, 2, 22), "2026-02-22"),
    ],
)
def test_other_structures_are_json_text(value: object, text: str) -> None:
    assert _format_return_value_as_mcp(value) == {
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


def test_models_and_dataclasses_are_json_text() -> None:
    class Weather(BaseModel):
        city: str
        celsius: float

    @dataclasses.dataclass
    class Pair:
        left: int
        right: Weather

    assert first_text(_format_return_value_as_mcp(Weather(city="Oslo", celsius=-3))) == (
        '{"city":"Oslo","celsius":-3.0}'
    )
    assert first_text(_format_return_value_as_mcp(Pair(1, Weather(city="Oslo", celsius=0)))) == (
        '{"left":1,"right":{"city":"Oslo","celsius":0.0}}'
    )


def test_mcp_shaped_value_is_passed_through_as_mcp_response() -> None:
    already: McpResponse = {
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "isError": True,
    }

    assert _format_return_value_as_mcp(already) == already
    assert _format_return_value_as_mcp({"content": [{"type": "text", "text": "x"}]}) == {
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
    }
    # The SDK spells the flag is_error; that is understood too.
    assert _format_return_value_as_mcp({"content": [], "is_error": True}) == {"content": [], "isError": True}


def test_dicts_that_only_look_similar_are_ordinary_json() -> None:
    assert first_text(_format_return_value_as_mcp({"content": "plain", "isError": False})) == (
        '{"content":"plain","isError":false}'
    )
    assert first_text(_format_return_value_as_mcp({"content": [], "extra": 1})) == '{"content":[],"extra":1}'


async def test_unserialisable_return_value_becomes_an_error_result() -> None:
    class Opaque:
        pass

    def opaque() -> object:
        return Opaque()

    response = await _create_async_handler(Tool(opaque))({})

    assert response["isError"] is True
    assert "Unable to serialize unknown type" in first_text(response)


async def test_files_are_refused_not_dropped() -> None:
    def picture() -> list[object]:
        return ["caption", BinaryContent(data=b"\x89PNG", media_type="image/png")]

    with pytest.raises(ValueError, match=r"returned files \(BinaryContent\)"):
        _format_return_value_as_mcp(picture())
    response = await _create_async_handler(Tool(picture))({})
    assert response["isError"] is True
    assert "can only return text" in first_text(response)
