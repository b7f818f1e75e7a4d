"""Large tool arguments: up to the documented limit they reach the tool; beyond it the turn fails clearly and
nothing is left open."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions import options as _options
from claudecode_model.exceptions import CLIResponseParseError
from claudecode_model.testing import OfflineBackend
from tests._support.reliability import Resources, assert_nothing_leaked

pytestmark = pytest.mark.cli

TWO_MB = 2 * 1024 * 1024


def big_argument_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``store_text`` with 2 MiB of text, then answers with its result."""
    returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f"done: {returns[-1].content}")])
    [name] = [tool.name for tool in info.function_tools if tool.name.endswith("store_text")]
    return ModelResponse(parts=[ToolCallPart(name, {"text": "x" * TWO_MB})])


def text_agent(model: ClaudeCodeModel) -> Agent[None, str]:
    agent = Agent(model)

    @agent.tool_plain
    def store_text(text: str) -> str:
        return f"stored {len(text)} characters"

    return agent


async def test_a_2_mb_tool_argument_reaches_the_tool(claude_backend: OfflineBackend) -> None:
    claude_backend.set_brain(FunctionModel(big_argument_brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        result = await text_agent(model).run("store it")
    finally:
        await model.aclose()
    assert result.output == f"done: stored {TWO_MB} characters"
    assert [r.text for r in claude_backend.requests[-1].tool_results()] == [f"stored {TWO_MB} characters"]


async def test_a_tool_argument_over_the_limit_is_a_clear_error_and_nothing_is_left_open(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_backend.set_brain(FunctionModel(big_argument_brain))
    monkeypatch.setattr(_options, "MAX_CLI_MESSAGE_BYTES", 1024 * 1024)
    before = Resources.now()
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        with pytest.raises(CLIResponseParseError, match="larger than this package reads.*1048576 bytes"):
            await text_agent(model).run("store it")
    finally:
        await model.aclose()
    await assert_nothing_leaked(before)
