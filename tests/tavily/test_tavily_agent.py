"""create_research_agent: the three tools on any pydantic-ai model (ClaudeCodeModel by default)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import claudecode_model
from claudecode_model.tavily import RESEARCH_INSTRUCTIONS, TavilySearchDeps, create_research_agent

if TYPE_CHECKING:
    from claudecode_model.tavily.testing import FakeTavilyServer


def researcher(seen: dict[str, object]) -> FunctionModel:
    """Searches once, then answers with the tool result it got."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["tools"] = sorted(tool.name for tool in info.function_tools)
        seen["instructions"] = info.instructions
        returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("tavily_search", {"query": "pydantic", "max_results": 1})])
        return ModelResponse(parts=[TextPart(str(returns[0].content))])

    return FunctionModel(respond)


async def test_research_agent_searches_with_its_default_deps(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    seen: dict[str, object] = {}
    agent = create_research_agent(researcher(seen), deps=deps)
    assert isinstance(agent, Agent)
    result = await agent.run("What is pydantic?")
    assert seen["tools"] == ["tavily_context", "tavily_extract", "tavily_search"]
    assert seen["instructions"] == RESEARCH_INSTRUCTIONS
    assert result.output == (
        "## 検索結果: pydantic\n\n### 1. pydantic - source 1\nURL: https://example.com/pydantic/1\n"
        "スコア: 0.95\nSummary 1 about pydantic."
    )
    assert len(fake_tavily.requests) == 1


async def test_run_deps_override_the_default(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    agent = create_research_agent(researcher({}), deps=replace(deps, api_key="tvly-wrong"), name="research")
    result = await agent.run("q", deps=deps)
    assert result.output.startswith("## 検索結果: pydantic")
    assert fake_tavily.requests[0].authorization == f"Bearer {deps.api_key}"
    assert agent.name == "research"


async def test_custom_instructions(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    seen: dict[str, object] = {}
    await create_research_agent(researcher(seen), deps=deps, instructions="Be brief.").run("q")
    assert seen["instructions"] == "Be brief."


def test_default_model_is_claude_code() -> None:
    model_class = getattr(claudecode_model, "ClaudeCodeModel", None)
    if model_class is None:
        pytest.skip("ClaudeCodeModel is not part of this build yet")
    agent = create_research_agent()
    assert isinstance(agent.model, model_class)
