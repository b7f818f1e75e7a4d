"""pydantic-ai's ``tool_choice`` as ``AnthropicModel`` honours it, checked on the tools the backend was offered.

Claude Code sends no ``tool_choice``: ``"none"`` and named subsets offer Claude only the allowed tools, an explicit
forcing choice is refused before anything starts, and pydantic-ai's own forced choice for output tools falls back to
an unforced one (the output tool is still offered, and the run still ends with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolOutput
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.settings import ModelSettings, ToolOrOutput

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.brains import tool_returns

pytestmark = pytest.mark.cli

PREFIX = "mcp__pydantic_tools__"


def _agent(model: ClaudeCodeModel, output_type: Any = str) -> Agent[None, object]:
    agent: Agent[None, object] = Agent(model, output_type=output_type)

    @agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    @agent.tool_plain
    def population(city: str) -> str:
        return f"many in {city}"

    return agent


def offered(backend: OfflineBackend) -> set[str]:
    return {name.removeprefix(PREFIX) for name in backend.requests[-1].tool_names}


async def test_without_tool_choice_every_tool_is_offered(claude_backend: OfflineBackend, model: ClaudeCodeModel):
    await _agent(model).run("hi")

    assert {"weather", "population"} <= offered(claude_backend)


async def test_tool_choice_none_offers_no_function_tool(claude_backend: OfflineBackend, model: ClaudeCodeModel):
    result = await _agent(model).run("hi", model_settings={"tool_choice": "none"})

    assert isinstance(result.output, str)
    assert not {"weather", "population"} & offered(claude_backend)


async def test_a_tool_or_output_subset_offers_only_those_tools(claude_backend: OfflineBackend, model: ClaudeCodeModel):
    await _agent(model).run("hi", model_settings={"tool_choice": ToolOrOutput(function_tools=["weather"])})

    names = offered(claude_backend)
    assert "weather" in names
    assert "population" not in names


async def test_an_explicit_forcing_choice_is_refused_before_anything_starts(
    claude_backend: OfflineBackend, model: ClaudeCodeModel
):
    with pytest.raises(UserError, match="cannot force a tool call"):
        await _agent(model, output_type=ToolOutput(int, name="final_result")).run(
            "hi", model_settings={"tool_choice": ["weather", "final_result"]}
        )

    assert claude_backend.requests == []


def test_the_profile_says_forcing_is_not_supported(model: ClaudeCodeModel):
    assert model.profile.get("supports_forced_tool_choice") is False


class City(BaseModel):
    name: str


def _calls_output_tool(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    [tool] = [t.name for t in info.function_tools if t.name.endswith("final_result")]
    if tool_returns(messages[-1]):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart(tool, {"name": "Paris"})])


async def test_output_tools_still_work_when_pydantic_ai_would_force_them(
    claude_backend: OfflineBackend, model: ClaudeCodeModel
):
    claude_backend.set_brain(FunctionModel(_calls_output_tool))
    result = await _agent(model, output_type=ToolOutput(City)).run("Capital of France?")

    assert result.output == City(name="Paris")
    assert {"weather", "population", "final_result"} <= {
        name.rsplit("__", 1)[-1] for name in claude_backend.requests[0].tool_names
    }
    assert "tool_choice" not in claude_backend.requests[0].raw


async def test_tool_choice_none_keeps_the_output_tool(claude_backend: OfflineBackend, model: ClaudeCodeModel):
    claude_backend.set_brain(FunctionModel(_calls_output_tool))
    result = await _agent(model, output_type=ToolOutput(City)).run(
        "Capital of France?", model_settings={"tool_choice": "none"}
    )

    assert result.output == City(name="Paris")
    names = {name.rsplit("__", 1)[-1] for name in claude_backend.requests[0].tool_names}
    assert "final_result" in names
    assert not {"weather", "population"} & names


class _WeatherFirst(AbstractCapability[None]):
    """Offers only ``weather`` at the run's first step, every tool afterwards (as a capability may, per step)."""

    def get_model_settings(self) -> Callable[[RunContext[None]], ModelSettings]:
        def resolve(ctx: RunContext[None]) -> ModelSettings:
            first = ctx.run_step <= 1
            return {"tool_choice": ToolOrOutput(function_tools=["weather"])} if first else {}

        return resolve


def _weather_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if tool_returns(messages[-1]):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart(PREFIX + "weather", {"city": "Paris"})])


async def test_a_choice_that_changes_between_steps_is_followed_at_each_step(
    claude_backend: OfflineBackend, model: ClaudeCodeModel
):
    claude_backend.set_brain(FunctionModel(_weather_then_answer))
    agent = _agent(model)

    result = await agent.run("Weather?", capabilities=[_WeatherFirst()])

    assert result.output == "done"
    first, last = claude_backend.requests[0], claude_backend.requests[-1]
    assert {"weather", "population"} & {n.removeprefix(PREFIX) for n in first.tool_names} == {"weather"}
    assert {"weather", "population"} <= {n.removeprefix(PREFIX) for n in last.tool_names}
