"""Output tools (``ToolOutput``) through the real CLI: Claude calls the output tool, pydantic-ai validates it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from claudecode_model.toolkit import done_output
from tests._support.brains import tool_returns

pytestmark = pytest.mark.cli


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    """Output tools inside Claude Code's loop (``tool_execution="cli"``: what this file covers); with pydantic-ai
    running the tools see ``tests/agentrun``."""
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution="cli")
    yield model
    await model.aclose()


class City(BaseModel):
    name: str
    country: str


def _output_tool(info: AgentInfo, suffix: str = "final_result") -> str:
    [name] = [tool.name for tool in info.function_tools if tool.name.endswith(suffix)]
    return name


def _user_texts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content if isinstance(part.content, str) else " ".join(map(str, part.content))
        for message in messages
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]


def invalid_then_valid_city(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Brain: a first call missing a field; once told what is wrong, a valid one."""
    tool = _output_tool(info)
    if not any("not accepted" in text for text in _user_texts(messages)):
        return ModelResponse(parts=[TextPart("Let me answer."), ToolCallPart(tool, {"name": "Paris"})])
    return ModelResponse(parts=[ToolCallPart(tool, {"name": "Paris", "country": "France"})])


async def test_invalid_output_call_is_retried_in_the_same_session(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain(FunctionModel(invalid_then_valid_city))
    agent = Agent(model, output_type=ToolOutput(City))

    result = await agent.run("What is the capital of France?")

    assert result.output == City(name="Paris", country="France")
    assert claude_backend.requests[0].tool_names == ["mcp__pydantic_tools__final_result"]
    # The validation error went back to Claude as text in the same conversation, which the CLI kept.
    retry_request = claude_backend.requests[1]
    assert "Field required" in retry_request.last_user_text()
    assert "What is the capital of France?" in retry_request.user_texts()
    responses = [message for message in result.all_messages() if isinstance(message, ModelResponse)]
    assert [type(part) for part in responses[0].parts] == [TextPart, ToolCallPart]
    assert responses[0].finish_reason == "tool_call"
    assert responses[0].provider_details is not None
    assert responses[1].provider_details is not None
    assert responses[0].provider_details["session_id"] == responses[1].provider_details["session_id"]


async def test_output_tool_streams_and_validates(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(_output_tool(info), {"name": "Paris", "country": "France"})])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=ToolOutput(City))

    async with agent.run_stream("Capital?") as stream:
        output = await stream.get_output()

    assert output == City(name="Paris", country="France")


async def test_text_or_output_tool_and_function_tools_in_one_run(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if "text please" in _user_texts(messages):
            return ModelResponse(parts=[TextPart("just text")])
        if not returns:
            return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__lookup", {"city": "Paris"})])
        return ModelResponse(parts=[ToolCallPart(_output_tool(info), {"name": "Paris", "country": returns[0].content})])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=[str, ToolOutput(City)])

    @agent.tool_plain
    def lookup(city: str) -> str:
        return "France"

    structured = await agent.run("structured please")
    text = await agent.run("text please")

    assert structured.output == City(name="Paris", country="France")
    response = structured.all_messages()[-2]
    assert isinstance(response, ModelResponse)
    assert [type(part) for part in response.parts] == [NativeToolCallPart, NativeToolReturnPart, ToolCallPart]
    assert text.output == "just text"


async def test_conversation_continues_after_an_output_tool_run(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.function_tools:
            return ModelResponse(parts=[ToolCallPart(_output_tool(info), {"name": "Oslo", "country": "Norway"})])
        return ModelResponse(parts=[TextPart(f"seen {len(messages)} messages")])

    claude_backend.set_brain(FunctionModel(brain))
    structured_agent = Agent(model, output_type=ToolOutput(City))
    chat_agent = Agent(model)

    first = await structured_agent.run("A city?")
    second = await chat_agent.run("Tell me more.", message_history=first.all_messages())

    assert first.output == City(name="Oslo", country="Norway")
    assert second.output.startswith("seen ")
    last_request = claude_backend.requests[-1]
    assert "Tell me more." in last_request.last_user_text()
    # The tool call the CLI already answered is not answered a second time with a tool_result.
    tool_use_ids = [result.tool_use_id for result in last_request.tool_results()]
    assert len(tool_use_ids) == len(set(tool_use_ids))


async def test_done_tool_of_the_toolkit_ends_the_run(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(_output_tool(info, "done"), {"message": "all tidy"})])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=[str, done_output()], end_strategy="early")

    result = await agent.run("Tidy up, then call done.")

    assert result.output == "all tidy"
    assert "mcp__pydantic_tools__done" in claude_backend.requests[0].tool_names


async def test_output_tools_next_to_registered_toolsets(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if not returns:
            return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__capital", {})])
        return ModelResponse(parts=[ToolCallPart(_output_tool(info), {"name": returns[0].content, "country": "FR"})])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=ToolOutput(City))

    @agent.tool_plain
    def capital() -> str:
        return "Paris"

    model.set_agent_toolsets(agent._function_toolset)
    result = await agent.run("go")

    assert result.output == City(name="Paris", country="FR")
    assert sorted(claude_backend.requests[0].tool_names) == [
        "mcp__pydantic_output__final_result",
        "mcp__pydantic_tools__capital",
    ]
