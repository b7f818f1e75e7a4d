"""Structured output through the CLI's native JSON-schema path, end to end with the real CLI."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, StructuredOutputError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


class City(BaseModel):
    name: str
    country: str


def answers_with_structured_output(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    [tool] = [t for t in info.function_tools if t.name == "StructuredOutput"]
    return ModelResponse(parts=[ToolCallPart(tool.name, {"name": "Paris", "country": "France"})])


async def test_output_type_uses_the_native_json_schema_path(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(answers_with_structured_output))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    agent = Agent(model, output_type=City)
    try:
        result = await agent.run("What is the capital of France?")
        async with agent.run_stream("And streamed?") as stream:
            streamed = await stream.get_output()
    finally:
        await model.aclose()

    assert result.output == City(name="Paris", country="France")
    assert streamed == City(name="Paris", country="France")
    structured_tool = claude_backend.requests[0].tool("StructuredOutput")
    assert structured_tool.parameters_json_schema["properties"].keys() == {"name", "country"}


async def test_missing_structured_output_is_a_typed_error(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("no JSON today")])))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    try:
        with pytest.raises(StructuredOutputError):
            await Agent(model, output_type=City).run("What is the capital of France?")
    finally:
        await model.aclose()
