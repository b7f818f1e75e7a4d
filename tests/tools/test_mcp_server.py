"""Seed 000, User Story 1: an Agent's tools become an in-process MCP server."""

from __future__ import annotations

import logging

import pytest
from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool
from mcp.server import Server
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from claudecode_model.mcp_integration import (
    DEFAULT_SERVER_NAME,
    allowed_tool_names,
    convert_tools_to_mcp_server,
    create_mcp_server_from_tools,
    create_tool_wrapper,
    extract_tool_definitions,
    mcp_tool_name,
)
from claudecode_model.tool_converter import _create_async_handler, convert_tool
from tests._support.mcp import mcp_session, texts


def make_agent() -> tuple[Agent[None, str], list[tuple[str, object]]]:
    calls: list[tuple[str, object]] = []
    agent = Agent(TestModel())

    @agent.tool_plain
    def add(x: int, y: int) -> int:
        """Add two numbers."""
        calls.append(("add", (x, y)))
        return x + y

    @agent.tool_plain
    async def shout(text: str) -> str:
        """Upper-case a text."""
        calls.append(("shout", text))
        return text.upper()

    @agent.tool_plain
    def fail(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(f"failed because {reason}")

    return agent, calls


async def test_tool_plain_toolset_becomes_sdk_mcp_tools_and_server_config() -> None:
    agent, _ = make_agent()
    toolset = agent._function_toolset

    sdk_tool = convert_tool(toolset.tools["add"])
    config = convert_tools_to_mcp_server(toolset)

    assert isinstance(sdk_tool, SdkMcpTool)
    assert config["type"] == "sdk"
    assert config["name"] == "pydantic_tools"
    assert isinstance(config["instance"], Server)
    async with mcp_session(config) as session:
        assert sorted(t["name"] for t in await session.list_tools()) == ["add", "fail", "shout"]


async def test_every_tool_is_published_as_mcp__pydantic_tools__name() -> None:
    agent, _ = make_agent()

    config: McpSdkServerConfig = create_mcp_server_from_tools(agent._function_toolset)

    assert DEFAULT_SERVER_NAME == "pydantic_tools"
    async with mcp_session(config) as session:
        listed = await session.list_tools()
    names = [mcp_tool_name(t["name"], config["name"]) for t in listed]
    assert sorted(names) == [
        "mcp__pydantic_tools__add",
        "mcp__pydantic_tools__fail",
        "mcp__pydantic_tools__shout",
    ]
    by_name = {t["name"]: t for t in listed}
    assert by_name["add"]["description"] == "Add two numbers."
    assert by_name["add"]["inputSchema"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert allowed_tool_names(config["name"]) == ["mcp__pydantic_tools"]
    assert allowed_tool_names(config["name"], ["add"]) == ["mcp__pydantic_tools__add"]


async def test_wrapper_runs_the_original_function_and_answers_in_mcp_text_form() -> None:
    agent, calls = make_agent()
    config = create_mcp_server_from_tools(agent._function_toolset)

    async with mcp_session(config) as session:
        added = await session.call_tool("add", {"x": 2, "y": 40})
        shouted = await session.call_tool("shout", {"text": "hi"})

    assert added == {"content": [{"type": "text", "text": "42"}], "isError": False}
    assert texts(shouted) == ["HI"]
    assert calls == [("add", (2, 40)), ("shout", "hi")]
    # The wrapper on its own returns the same MCP shape.
    wrapper = create_tool_wrapper(agent._function_toolset.tools["add"])
    assert await wrapper({"x": 1, "y": 1}) == {
        "content": [{"type": "text", "text": "2"}],
        "isError": False,
        "is_error": False,
    }


async def test_mcp_integration_wrapper_logs_then_reraises(caplog: pytest.LogCaptureFixture) -> None:
    agent, _ = make_agent()
    wrapper = create_tool_wrapper(agent._function_toolset.tools["fail"])

    with (
        caplog.at_level(logging.ERROR, logger="claudecode_model.mcp_integration"),
        pytest.raises(RuntimeError, match="failed because disk full"),
    ):
        await wrapper({"reason": "disk full"})

    assert any("'fail'" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_tool_converter_handler_returns_is_error_response(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, _ = make_agent()
    handler = _create_async_handler(agent._function_toolset.tools["fail"])

    with caplog.at_level(logging.WARNING, logger="claudecode_model.tool_converter"):
        response = await handler({"reason": "disk full"})

    assert response == {"content": [{"type": "text", "text": "failed because disk full"}], "isError": True}
    assert any("'fail'" in r.getMessage() and "disk full" in r.getMessage() for r in caplog.records)


async def test_both_paths_reach_claude_as_an_error_result_with_the_message() -> None:
    agent, _ = make_agent()
    tool = agent._function_toolset.tools["fail"]
    from claude_agent_sdk import create_sdk_mcp_server

    via_wrapper = SdkMcpTool("fail", "", {"type": "object", "properties": {}}, create_tool_wrapper(tool))
    servers = [create_mcp_server_from_tools([tool]), create_sdk_mcp_server("raw", tools=[via_wrapper])]

    for config in servers:
        async with mcp_session(config) as session:
            result = await session.call_tool("fail", {"reason": "disk full"})
        assert result["isError"] is True
        assert texts(result) == ["failed because disk full"]


async def test_tool_definitions_and_a_wrapper_built_from_one() -> None:
    agent, calls = make_agent()

    definitions = extract_tool_definitions(agent._function_toolset)
    by_name = {d["name"]: d for d in definitions}
    wrapper = create_tool_wrapper(by_name["shout"])

    assert [d["name"] for d in definitions] == ["add", "shout", "fail"]
    assert by_name["add"]["description"] == "Add two numbers."
    assert by_name["add"]["input_schema"]["required"] == ["x", "y"]
    assert callable(by_name["add"]["function"])
    assert await wrapper({"text": "quiet"}) == {
        "content": [{"type": "text", "text": "QUIET"}],
        "isError": False,
        "is_error": False,
    }
    assert calls == [("shout", "quiet")]
