"""Structured output end to end: native, prompted and text output, unions, nesting, retries, validators, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import BaseModel, field_validator
from pydantic_ai import Agent, ModelRetry, NativeOutput, PromptedOutput, RunContext, TextOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, StructuredOutputError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

STRUCTURED = "StructuredOutput"


class City(BaseModel):
    name: str
    country: str

    @field_validator("name")
    @classmethod
    def capitalised(cls, name: str) -> str:
        if not name[:1].isupper():
            raise ValueError("the city name must start with a capital letter")
        return name


class Country(BaseModel):
    name: str
    capital: str


class Trip(BaseModel):
    home: Country
    stops: list[City]


def last_user_text(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            texts = [p.content for p in message.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
            if texts:
                return "\n".join(texts)
    return ""


def structured_brain(*answers: Any, preamble: str | None = None) -> Callable[..., ModelResponse]:
    """Brain: calls the CLI's StructuredOutput tool with the next answer, one per user turn (the last repeats)."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert STRUCTURED in [tool.name for tool in info.function_tools], "the native path offers StructuredOutput"
        turns = sum(isinstance(m, ModelResponse) and _calls_structured(m) for m in messages)
        answer = answers[min(turns, len(answers) - 1)]
        parts: list[Any] = [TextPart(preamble)] if preamble else []
        return ModelResponse(parts=[*parts, ToolCallPart(STRUCTURED, answer)])

    return brain


def _calls_structured(message: ModelResponse) -> bool:
    return any(isinstance(p, ToolCallPart) and p.tool_name == STRUCTURED for p in message.parts)


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 60})
    yield model
    await model.aclose()


async def test_native_output_explicitly(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(structured_brain({"name": "Paris", "country": "France"})))

    result = await Agent(model, output_type=NativeOutput(City)).run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    schema = claude_backend.requests[0].tool(STRUCTURED).parameters_json_schema
    assert schema["required"] == ["name", "country"]


async def test_union_output_type_uses_the_native_path(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    payload = {"result": {"kind": "Country", "data": {"name": "France", "capital": "Paris"}}}
    claude_backend.set_brain(FunctionModel(structured_brain(payload)))
    agent: Agent[None, City | Country] = Agent(model, output_type=City | Country)  # type: ignore[arg-type]

    result = await agent.run("Tell me about France.")

    assert result.output == Country(name="France", capital="Paris")
    schema = claude_backend.requests[0].tool(STRUCTURED).parameters_json_schema
    kinds = [option["properties"]["kind"]["const"] for option in schema["properties"]["result"]["anyOf"]]
    assert kinds == ["City", "Country"]


async def test_nested_output_model(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    trip = {
        "home": {"name": "Japan", "capital": "Tokyo"},
        "stops": [{"name": "Lyon", "country": "France"}, {"name": "Porto", "country": "Portugal"}],
    }
    claude_backend.set_brain(FunctionModel(structured_brain(trip)))

    result = await Agent(model, output_type=Trip).run("Plan a trip.")

    assert result.output == Trip.model_validate(trip)
    schema = claude_backend.requests[0].tool(STRUCTURED).parameters_json_schema
    assert {"home", "stops"} <= schema["properties"].keys()


async def test_invalid_native_output_is_retried_and_corrected(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    # The JSON schema cannot say "capitalised": the CLI accepts the first answer, pydantic rejects it.
    claude_backend.set_brain(
        FunctionModel(structured_brain({"name": "paris", "country": "France"}, {"name": "Paris", "country": "France"}))
    )

    result = await Agent(model, output_type=City, retries={"output": 2}).run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    retry_text = claude_backend.requests[-1].last_user_text()
    assert "must start with a capital letter" in retry_text
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert len(responses) == 2
    # The second request continued the same CLI session.
    sessions = {(r.provider_details or {}).get("session_id") for r in responses}
    assert len(sessions) == 1


async def test_schema_invalid_native_output_is_corrected_inside_the_cli(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    # Missing a required field: the CLI validates against the JSON schema itself and tells Claude to try again.
    claude_backend.set_brain(FunctionModel(structured_brain({"name": "Paris"}, {"name": "Paris", "country": "France"})))

    result = await Agent(model, output_type=City).run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    [rejected] = claude_backend.requests[-1].tool_results()
    assert rejected.is_error
    assert "country" in rejected.text
    assert len([m for m in result.all_messages() if isinstance(m, ModelResponse)]) == 1


async def test_output_validator_model_retry_then_success(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(
        FunctionModel(structured_brain({"name": "Lyon", "country": "France"}, {"name": "Paris", "country": "France"}))
    )
    agent: Agent[None, City] = Agent(model, output_type=City)
    checked: list[str] = []

    @agent.output_validator
    def must_be_the_capital(ctx: RunContext[None], city: City) -> City:
        checked.append(city.name)
        if city.name != "Paris":
            raise ModelRetry(f"{city.name} is not the capital of {city.country}")
        return city

    result = await agent.run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    assert checked == ["Lyon", "Paris"]
    assert "Lyon is not the capital of France" in claude_backend.requests[-1].last_user_text()


async def test_native_output_streams_past_a_preamble(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(
        FunctionModel(structured_brain({"name": "Paris", "country": "France"}, preamble="Here is the city you want."))
    )
    agent = Agent(model, output_type=City)

    async with agent.run_stream("Capital of France?") as stream:
        partials = [output async for output in stream.stream_output(debounce_by=None)]
        output = await stream.get_output()

    assert output == City(name="Paris", country="France")
    assert partials[-1] == output
    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.parts[0] == TextPart("Here is the city you want.")
    assert any(isinstance(p, NativeToolCallPart) and p.tool_name == STRUCTURED for p in response.parts)
    assert response.finish_reason == "stop"


async def test_prompted_output(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(_paris_json())])))

    result = await Agent(model, output_type=PromptedOutput(City)).run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    request = claude_backend.requests[0]
    assert STRUCTURED not in request.tool_names  # prompted output does not use the CLI's JSON schema
    assert '"required": ["name", "country"]' in request.system


async def test_invalid_prompted_output_is_retried(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answered = any(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[TextPart(_paris_json() if answered else "Paris, in France.")])

    claude_backend.set_brain(FunctionModel(brain))

    result = await Agent(model, output_type=PromptedOutput(City)).run("Capital of France?")

    assert result.output == City(name="Paris", country="France")
    assert "Invalid JSON" in claude_backend.requests[-1].last_user_text()


async def test_text_output_function(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain("Paris, Lyon, Marseille")

    def split(text: str) -> list[str]:
        return [item.strip() for item in text.split(",")]

    result = await Agent(model, output_type=TextOutput(split)).run("Three French cities?")
    async with Agent(model, output_type=TextOutput(split)).run_stream("Again, streamed") as stream:
        streamed = await stream.get_output()

    assert result.output == streamed == ["Paris", "Lyon", "Marseille"]


async def test_missing_structured_output_in_a_stream_is_a_typed_error(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain("I would rather not use the tool.")
    agent = Agent(model, output_type=City)

    with pytest.raises(StructuredOutputError, match="structured output"):
        async with agent.run_stream("Capital of France?") as stream:
            await stream.get_output()

    # The model still works afterwards.
    claude_backend.set_brain(FunctionModel(structured_brain({"name": "Paris", "country": "France"})))
    assert (await agent.run("Capital of France?")).output == City(name="Paris", country="France")


def _paris_json() -> str:
    return json.dumps({"name": "Paris", "country": "France"})
