"""Seed 000, User Story 5: only the tools a request names reach Claude (``_process_function_tools()``)."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, FunctionToolset, RunContext
from pydantic_ai.models.test import TestModel

from claudecode_model._tools.core import AgentToolset
from claudecode_model.exceptions import ToolNotFoundError, ToolsetNotRegisteredError, ToolValidationError
from claudecode_model.mcp_integration import create_mcp_server_from_tools, filter_tools_for_request
from tests._support.agents import add_constant_tools
from tests._support.mcp import mcp_session


def three_tool_agent() -> Agent[None, str]:
    agent = Agent(TestModel())
    add_constant_tools(agent, alpha="a", beta="b", gamma="c")
    return agent


async def test_only_the_requested_tools_are_in_the_rebuilt_server() -> None:
    toolset = three_tool_agent()._function_toolset

    selected = filter_tools_for_request(toolset, ["gamma", "alpha"])
    server = create_mcp_server_from_tools(selected, "pydantic_tools")

    assert [tool.name for tool in selected] == ["gamma", "alpha"]
    async with mcp_session(server) as session:
        assert sorted(t["name"] for t in await session.list_tools()) == ["alpha", "gamma"]


def test_several_toolsets_and_repeated_names() -> None:
    extra = FunctionToolset()

    @extra.tool_plain
    def delta() -> str:
        return "d"

    registered: list[AgentToolset] = [three_tool_agent()._function_toolset, extra]

    assert [t.name for t in filter_tools_for_request(registered, ["delta", "beta", "delta"])] == [
        "delta",
        "beta",
    ]
    assert filter_tools_for_request(registered, []) == []


def test_unknown_tool_name_raises_tool_not_found_error() -> None:
    toolset = three_tool_agent()._function_toolset

    with pytest.raises(ToolNotFoundError, match=r"not found.*: omega, psi\. Available tools: alpha, beta, gamma"):
        filter_tools_for_request(toolset, ["alpha", "omega", "psi"])


def test_function_tools_without_registered_toolsets_raise_toolset_not_registered_error() -> None:
    with pytest.raises(ToolsetNotRegisteredError, match="set_agent_toolsets"):
        filter_tools_for_request(None, ["alpha"])


def test_no_function_tools_needs_no_registration() -> None:
    assert filter_tools_for_request(None, []) == []


def test_duplicate_names_across_toolsets_are_refused() -> None:
    with pytest.raises(ToolValidationError, match="Two tools are named 'alpha'"):
        filter_tools_for_request(
            [three_tool_agent()._function_toolset, three_tool_agent()._function_toolset], ["alpha"]
        )


def test_registering_a_tool_that_takes_a_run_context_fails_at_registration():
    """It used to fail only at the first request that named it (issue 39)."""
    from pydantic_ai import Agent

    from claudecode_model import ClaudeCodeModel
    from claudecode_model.exceptions import MissingDepsError

    model = ClaudeCodeModel()
    agent: Agent[None, str] = Agent(model)

    @agent.tool
    def whoami(ctx: RunContext[None]) -> str:
        """Who runs."""
        return "me"

    @agent.tool_plain
    def plain() -> str:
        """Plain."""
        return "plain"

    with pytest.raises(MissingDepsError, match="whoami take a RunContext"):
        model.set_agent_toolsets(agent._function_toolset)
