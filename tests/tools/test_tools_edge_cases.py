"""Seed 000, Edge Cases: one test each (the set_agent_toolsets() case belongs to ClaudeCodeModel's tests)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import types
from collections.abc import Callable
from typing import Any, Generic, NewType, TypeVar

import pytest
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models.test import TestModel

from claudecode_model.deps_support import (
    DepsContext,
    deserialize_deps,
    is_serializable_type,
    serialize_deps,
)
from claudecode_model.exceptions import ToolValidationError, TypeHintResolutionError
from claudecode_model.mcp_integration import create_mcp_server_from_tools, create_tool_wrapper
from claudecode_model.tool_converter import (
    _create_async_handler,
    _format_return_value_as_mcp,
    _get_parameters_json_schema,
    convert_tool,
    convert_tool_with_deps,
)


def ok() -> str:
    return "ok"


def duck(**attributes: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{"name": "duck", "description": "A duck tool.", "function": ok, **attributes})


# --- validation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", None])
def test_edge_empty_tool_name_raises_tool_validation_error(name: str | None) -> None:
    tool = duck(name=name, parameters_json_schema={"type": "object", "properties": {}})

    with pytest.raises(ToolValidationError, match="non-empty"):
        convert_tool(tool)
    with pytest.raises(ToolValidationError):
        create_mcp_server_from_tools([tool])
    real = Tool(ok)
    real.name = name  # type: ignore[assignment]  # an invalid name, on purpose
    with pytest.raises(ToolValidationError):
        convert_tool(real)


@pytest.mark.parametrize("function", [None, "not callable"])
def test_edge_tool_without_function_raises_tool_validation_error(function: object) -> None:
    tool = duck(function=function, parameters_json_schema={"type": "object", "properties": {}})

    with pytest.raises(ToolValidationError, match="has no function registered"):
        convert_tool(tool)
    with pytest.raises(ToolValidationError):
        create_tool_wrapper(tool)
    with pytest.raises(ToolValidationError):
        convert_tool(duck(parameters_json_schema={}, **{"function": None}))


def test_edge_missing_function_attribute_raises_tool_validation_error() -> None:
    tool = types.SimpleNamespace(name="nofunc", description="", parameters_json_schema={})

    with pytest.raises(ToolValidationError, match="'nofunc' has no function registered"):
        convert_tool(tool)


def test_edge_schema_pattern_1_parameters_json_schema_comes_first() -> None:
    first = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = duck(
        parameters_json_schema=first,
        function_schema=types.SimpleNamespace(json_schema={"type": "object", "properties": {}}),
        tool_def=types.SimpleNamespace(parameters_json_schema={"type": "object", "properties": {}}),
    )

    assert _get_parameters_json_schema(tool) is first
    assert convert_tool(tool).input_schema == first


def test_edge_schema_pattern_2_function_schema_json_schema() -> None:
    second = {"type": "object", "properties": {"b": {"type": "integer"}}}
    tool = duck(
        function_schema=types.SimpleNamespace(json_schema=second),
        tool_def=types.SimpleNamespace(parameters_json_schema={"type": "object", "properties": {}}),
    )

    assert _get_parameters_json_schema(tool) is second
    assert _get_parameters_json_schema(Tool(ok)) == Tool(ok).function_schema.json_schema


def test_edge_schema_pattern_3_tool_def_parameters_json_schema() -> None:
    third = {"type": "object", "properties": {"c": {"type": "boolean"}}}
    tool = duck(parameters_json_schema=None, tool_def=types.SimpleNamespace(parameters_json_schema=third))

    assert _get_parameters_json_schema(tool) is third


def test_edge_schema_all_three_patterns_fail_raises_tool_validation_error() -> None:
    tool = duck(function_schema=types.SimpleNamespace(), tool_def=types.SimpleNamespace(other=1))

    with pytest.raises(ToolValidationError, match=r"Cannot extract JSON schema from tool 'duck'"):
        _get_parameters_json_schema(tool)
    with pytest.raises(ToolValidationError):
        convert_tool(tool)


@pytest.mark.parametrize("schema", ['{"type": "object"}', ["type", "object"], 42, ("a",)])
def test_edge_non_dict_parameters_json_schema_raises_tool_validation_error(schema: object) -> None:
    with pytest.raises(ToolValidationError, match="must be a dict"):
        convert_tool(duck(parameters_json_schema=schema))
    with pytest.raises(ToolValidationError, match=r"function_schema\.json_schema\) must be a dict"):
        convert_tool(duck(function_schema=types.SimpleNamespace(json_schema=schema)))


def test_edge_bare_object_schema_gets_empty_properties() -> None:
    assert convert_tool(duck(parameters_json_schema={"type": "object"})).input_schema == {
        "type": "object",
        "properties": {},
    }


# --- forward references in dataclass deps -------------------------------------------------------------------


@dataclasses.dataclass
class Unresolvable:
    target: MissingType  # type: ignore[name-defined]  # noqa: F821


@dataclasses.dataclass
class Outer:
    inner: Unresolvable | None = None


class Target:
    """Not serialisable, but only reachable through string forward references below."""


LenientT = TypeVar("LenientT", bound="Target")
UserId = NewType("UserId", "int")


@dataclasses.dataclass
class Box(Generic[LenientT]):
    item: Any
    owner: UserId


async def test_edge_dataclass_with_unresolved_forward_reference_raises_type_hint_resolution_error() -> None:
    value = Unresolvable(target=1)
    tool = Tool(ok)

    for attempt in (
        lambda: serialize_deps(value),
        lambda: DepsContext(value),
        lambda: convert_tool_with_deps(tool, value),
        lambda: is_serializable_type(Unresolvable),
        lambda: deserialize_deps('{"target": 1}', Unresolvable),
        lambda: serialize_deps(Outer()),  # nested: the field type alone is enough
    ):
        with pytest.raises(TypeHintResolutionError, match=r"'Unresolvable'.*MissingType"):
            attempt()


def test_edge_forward_reference_that_stays_a_string_logs_a_warning_and_is_lenient(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @dataclasses.dataclass
    class Holder:
        box: Box[Target]
        ids: list[LenientT]  # type: ignore[valid-type]  # an unbound type variable, as lenient code may have

    value = Holder(box=Box(item="x", owner=UserId(7)), ids=[])

    with caplog.at_level(logging.WARNING, logger="claudecode_model.deps_support"):
        text = serialize_deps(value)
        assert is_serializable_type(Holder)

    assert text == '{"box": {"item": "x", "owner": 7}, "ids": []}'
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'Target'" in w and "assuming it is serialisable" in w for w in warnings)
    assert any("'int'" in w and "owner" in w for w in warnings)
    assert DepsContext(value).deps is value


# --- cancellation -------------------------------------------------------------------------------------------


class Blocker:
    """A tool (``Blocker().tool``) that waits until cancelled and records what happened."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

        async def block() -> str:
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return "unreachable"

        self.tool = Tool(block)


@pytest.mark.parametrize(
    "make_handler",
    [_create_async_handler, create_tool_wrapper],
    ids=["tool_converter_handler", "mcp_integration_wrapper"],
)
async def test_edge_cancelled_error_propagates_from_the_handler(make_handler: Callable[[Tool[Any]], Any]):
    blocker = Blocker()
    handler = make_handler(blocker.tool)

    task = asyncio.create_task(handler({}))
    await blocker.started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocker.cancelled


async def test_edge_cancelled_error_raised_inside_a_tool_is_not_turned_into_an_error_result() -> None:
    async def gives_up() -> str:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await _create_async_handler(Tool(gives_up))({})
    with pytest.raises(asyncio.CancelledError):
        await create_tool_wrapper(Tool(gives_up))({})


async def test_edge_cancelled_error_propagates_from_a_deps_tool_handler() -> None:
    started = asyncio.Event()
    agent = Agent(TestModel(), deps_type=dict)

    @agent.tool
    async def wait(ctx: RunContext[dict[str, int]]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    handler = convert_tool_with_deps(agent._function_toolset.tools["wait"], {"a": 1}).handler
    task = asyncio.ensure_future(handler({}))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task


# --- None ---------------------------------------------------------------------------------------------------


async def test_edge_none_return_value_becomes_empty_text() -> None:
    def nothing() -> None:
        return None

    assert _format_return_value_as_mcp(None) == {"content": [{"type": "text", "text": ""}], "isError": False}
    assert await _create_async_handler(Tool(nothing))({}) == {
        "content": [{"type": "text", "text": ""}],
        "isError": False,
    }
