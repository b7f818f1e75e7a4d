"""Tool results of any size: Claude gets them whole up to what Claude Code can show of one result (500,000
characters, raised from its default 50,000 by the tools' listing), a longer one cut with a marker saying so; the
run's history keeps every character.

End to end through the real Claude Code CLI, both tool transports and both execution modes.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._history.cut_results import CLI_INLINE_LIMIT, TEXT_LIMIT
from claudecode_model._tools.execution import ToolExecution, TransportType
from claudecode_model.testing import OfflineBackend
from tests._support.agents import add_constant_tools, numbered_lines, run_then_close

pytestmark = pytest.mark.cli


def call_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if any(isinstance(p, ToolReturnPart) for p in last.parts) or any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])


def tool_result_seen(backend: OfflineBackend) -> str:
    [(_, text, is_error)] = [r for request in backend.requests for r in request.tool_results()][-1:]
    assert not is_error
    return text


@pytest.mark.parametrize("execution", ["agent", "cli"])
@pytest.mark.parametrize("transport", ["sdk", "stdio"])
@pytest.mark.parametrize("size", [10_000, 60_000, TEXT_LIMIT])
async def test_a_result_claude_code_can_show_reaches_claude_whole(
    claude_backend: OfflineBackend, size: int, transport: TransportType, execution: ToolExecution
):
    if execution == "cli" and size != 60_000:
        pytest.skip("one size suffices for Claude Code's own loop")
    claude_backend.set_brain(FunctionModel(call_once))
    output = numbered_lines(size)
    model = ClaudeCodeModel(
        env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport, tool_execution=execution
    )
    agent = Agent(model)
    add_constant_tools(agent, dump=output)
    result = await run_then_close(agent, model, "dump it")

    assert result.output == "done"
    assert tool_result_seen(claude_backend) == output


@pytest.mark.parametrize("transport", ["sdk", "stdio"])
async def test_a_result_longer_than_claude_code_shows_is_cut_with_a_marker_and_kept_whole_in_the_history(
    claude_backend: OfflineBackend, transport: TransportType
):
    claude_backend.set_brain(FunctionModel(call_once))
    output = numbered_lines(3_000_000)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport)
    agent = Agent(model)
    add_constant_tools(agent, dump=output)
    result = await run_then_close(agent, model, "dump it")

    seen = tool_result_seen(claude_backend)
    assert len(seen) < CLI_INLINE_LIMIT
    shown = seen[: seen.index("\n[tool result cut")]
    assert output.startswith(shown)
    assert len(shown) > 400_000
    assert "of 3,000,000 characters" in seen
    assert "persisted-output" not in seen
    [returned] = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returned.content == output
