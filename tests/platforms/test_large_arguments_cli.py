"""Large things stay off the CLI's command line, whose design limit is Windows' 32,767 characters on every platform:
an output schema longer than ``INLINE_OUTPUT_SCHEMA_CHARACTERS`` reaches the CLI in its ``initialize`` request."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions.options import INLINE_OUTPUT_SCHEMA_CHARACTERS
from claudecode_model.testing import OfflineBackend
from tests._support.processes import cli_children, cmdline

pytestmark = pytest.mark.cli

GUIDE = "Name the city as its people write it. " * 1000
"""A field description of about 38,000 characters: the schema alone would exceed Windows' command line."""


class City(BaseModel):
    name: str = Field(description=GUIDE)
    country: str


def answers_with_structured_output(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    [tool] = [t for t in info.function_tools if t.name == "StructuredOutput"]
    return ModelResponse(parts=[ToolCallPart(tool.name, {"name": "Paris", "country": "France"})])


async def test_an_output_schema_too_long_for_a_command_line_reaches_the_cli_in_its_initialize_request(
    claude_backend: OfflineBackend,
):
    assert len(City.model_json_schema()["properties"]["name"]["description"]) > 32_767
    claude_backend.set_brain(FunctionModel(answers_with_structured_output))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        result = await Agent(model, output_type=City).run("What is the capital of France?")
        [cli] = cli_children()  # kept for a follow-up
        argv = cmdline(cli)
    finally:
        await model.aclose()

    assert result.output == City(name="Paris", country="France")
    structured = claude_backend.requests[0].tool("StructuredOutput")
    assert structured.parameters_json_schema["properties"]["name"]["description"] == GUIDE
    assert "--json-schema" not in argv
    assert sum(len(arg) + 1 for arg in argv) < 32_767


async def test_a_small_output_schema_stays_on_the_command_line(claude_backend: OfflineBackend):
    class Small(BaseModel):
        name: str

    claude_backend.set_brain(
        FunctionModel(lambda messages, info: ModelResponse(parts=[ToolCallPart("StructuredOutput", {"name": "x"})]))
    )
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        result = await Agent(model, output_type=Small).run("Name one.")
        [cli] = cli_children()
        argv = cmdline(cli)
    finally:
        await model.aclose()

    assert result.output == Small(name="x")
    assert len(argv[argv.index("--json-schema") + 1]) <= INLINE_OUTPUT_SCHEMA_CHARACTERS
