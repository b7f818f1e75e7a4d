"""Seed 000, User Story 3: tools with dependencies through convert_tool_with_deps() (experimental)."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import tempfile
import threading
from typing import TYPE_CHECKING

import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel

from claudecode_model.deps_support import DepsContext
from claudecode_model.exceptions import UnsupportedDepsTypeError
from claudecode_model.mcp_integration import create_mcp_server_from_tools
from claudecode_model.tool_converter import convert_tool_with_deps
from tests._support.mcp import mcp_session, texts

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@dataclasses.dataclass
class ApiConfig:
    base_url: str
    api_key: str
    retries: int = 2


class ModelConfig(BaseModel):
    greeting: str
    punctuation: str = "!"


@dataclasses.dataclass
class WithClient:
    name: str
    client: object


class ModelWithClient(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    client: object


seen_contexts: list[object] = []


def dataclass_agent() -> Agent[ApiConfig, str]:
    agent = Agent(TestModel(), deps_type=ApiConfig)

    @agent.tool
    def endpoint(ctx: RunContext[ApiConfig], path: str) -> str:
        """Build an endpoint URL."""
        seen_contexts.append(ctx)
        return f"{ctx.deps.base_url}/{path}?key={ctx.deps.api_key}"

    return agent


async def test_dataclass_deps_get_a_deps_context_injected_into_the_handler() -> None:
    seen_contexts.clear()
    config = ApiConfig(base_url="https://api.example", api_key="k1")
    tool = dataclass_agent()._function_toolset.tools["endpoint"]

    converted = convert_tool_with_deps(tool, config)
    result = await converted.handler({"path": "users"})

    assert result["content"] == [{"type": "text", "text": "https://api.example/users?key=k1"}]
    assert result["isError"] is False
    [ctx] = seen_contexts
    assert isinstance(ctx, DepsContext)
    assert ctx.deps is config
    assert (ctx.tool_name, ctx.tool_call_id, ctx.retry) == ("endpoint", None, 0)


async def test_deps_tools_work_through_the_mcp_server() -> None:
    agent = dataclass_agent()

    @agent.tool_plain
    def ping() -> str:
        return "pong"

    server = create_mcp_server_from_tools(agent._function_toolset, deps=ApiConfig("https://x", "k2"))

    async with mcp_session(server) as session:
        assert texts(await session.call_tool("endpoint", {"path": "p"})) == ["https://x/p?key=k2"]
        assert texts(await session.call_tool("ping", {})) == ["pong"]


async def test_pydantic_model_deps_get_a_deps_context() -> None:
    agent = Agent(TestModel(), deps_type=ModelConfig)

    @agent.tool
    async def greet(ctx: RunContext[ModelConfig], name: str) -> str:
        assert isinstance(ctx, DepsContext)
        return f"{ctx.deps.greeting}, {name}{ctx.deps.punctuation}"

    converted = convert_tool_with_deps(agent._function_toolset.tools["greet"], ModelConfig(greeting="Hello"))

    result = await converted.handler({"name": "Ada"})
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]


@pytest.mark.parametrize("kind", ["dict", "list", "str", "int", "none"])
async def test_plain_json_deps_are_accepted(kind: str) -> None:
    deps = {"dict": {"a": [1, {"b": None}]}, "list": [1, "two"], "str": "s", "int": 7, "none": None}[kind]
    agent = Agent(TestModel(), deps_type=object)

    @agent.tool
    def echo(ctx: RunContext[object]) -> object:
        return ctx.deps

    result = await convert_tool_with_deps(agent._function_toolset.tools["echo"], deps).handler({})
    assert result["isError"] is False


@pytest.fixture
async def unserialisable() -> AsyncIterator[dict[str, object]]:
    async def coroutine_function() -> None:
        return None

    coroutine = coroutine_function()
    with socket.socket() as sock, tempfile.TemporaryFile() as handle:
        async with httpx.AsyncClient() as client, httpx.AsyncClient() as other_client:
            yield {
                "httpx.AsyncClient": client,
                "socket": sock,
                "file handle": handle,
                "lock": threading.Lock(),
                "asyncio.Lock": asyncio.Lock(),
                "coroutine": coroutine,
                "function": coroutine_function,
                "set": {1, 2},
                "bytes": b"raw",
                "dataclass holding a client": WithClient("n", other_client),
                "dict holding a socket": {"sock": sock},
                "dict with int keys": {1: "a"},
                "model holding a lock": ModelWithClient(client=threading.Lock()),
            }
    coroutine.close()


async def test_non_serialisable_deps_raise_unsupported_deps_type_error(
    unserialisable: dict[str, object],
) -> None:
    tool = dataclass_agent()._function_toolset.tools["endpoint"]

    async with httpx.AsyncClient() as client:
        with pytest.raises(UnsupportedDepsTypeError, match=r"deps is a httpx\.AsyncClient"):
            convert_tool_with_deps(tool, client)

    for label, deps in unserialisable.items():
        with pytest.raises(UnsupportedDepsTypeError):
            convert_tool_with_deps(tool, deps)
        with pytest.raises(UnsupportedDepsTypeError):
            DepsContext(deps)
        assert label  # every case above raised


def test_the_error_says_where_the_bad_value_is() -> None:
    tool = dataclass_agent()._function_toolset.tools["endpoint"]

    with pytest.raises(UnsupportedDepsTypeError, match=r"deps\.client is a threading|deps\.client is a _thread"):
        convert_tool_with_deps(tool, WithClient("n", threading.Lock()))
    with pytest.raises(UnsupportedDepsTypeError, match=r"deps\['a'\]\[1\]"):
        convert_tool_with_deps(tool, {"a": [1, threading.Lock()]})


def test_self_referencing_deps_are_refused() -> None:
    looped: dict[str, object] = {}
    looped["self"] = looped

    with pytest.raises(UnsupportedDepsTypeError, match="refers back to itself"):
        DepsContext(looped)
