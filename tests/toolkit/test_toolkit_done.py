"""The standard ``done`` tool: the run ends with its message; other calls of the same reply are not run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelRequest,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from claudecode_model.toolkit import DONE_TOOL_NAME, ToolOutputCache, done, done_output, todo_toolset
from tests._support.brains import Script

if TYPE_CHECKING:
    pass

pytestmark = pytest.mark.filterwarnings("error")


def test_done_returns_its_message() -> None:
    assert done("all good") == "all good"
    output = done_output()
    assert output.name == DONE_TOOL_NAME == "done"
    assert output.description is not None
    assert "other tool calls in the same reply are not run" in output.description


async def test_done_ends_the_run_and_other_calls_of_the_reply_are_not_run() -> None:
    ran: list[str] = []
    script = Script(
        [
            ToolCallPart("side_effect", {"tag": "before"}),
            ToolCallPart("done", {"message": "Finished: 3 files tidied."}),
            ToolCallPart("side_effect", {"tag": "after"}),
        ],
    )
    agent = Agent(script.model, output_type=[str, done_output()], end_strategy="early")

    @agent.tool_plain
    def side_effect(tag: str) -> str:
        ran.append(tag)
        return tag

    result = await agent.run("tidy up")
    assert result.output == "Finished: 3 files tidied."
    assert ran == []
    assert len(script.infos) == 1  # no further model request
    last = result.all_messages()[-1]
    assert isinstance(last, ModelRequest)
    skipped = [p for p in last.parts if isinstance(p, ToolReturnPart) and p.tool_name == "side_effect"]
    assert [p.content for p in skipped] == ["Tool not executed - a final result was already processed."] * 2


async def test_done_is_offered_as_an_output_tool_and_text_still_ends_the_run() -> None:
    script = Script([TextPart("plain answer")])
    agent = Agent(script.model, output_type=[str, done_output()], end_strategy="early")
    result = await agent.run("hi")
    assert result.output == "plain answer"
    info = script.infos[0]
    assert [tool.name for tool in info.output_tools] == ["done"]
    assert info.allow_text_output
    assert info.output_tools[0].parameters_json_schema["required"] == ["message"]


async def test_done_with_the_other_standard_tools() -> None:
    script = Script(
        [ToolCallPart("write_todos", {"todos": [{"content": "Ship it", "status": "in_progress"}]})],
        [ToolCallPart("done", {"message": "shipped"})],
    )
    agent = Agent(
        script.model,
        output_type=[str, done_output()],
        end_strategy="early",
        toolsets=[todo_toolset()],
        capabilities=[ToolOutputCache()],
    )
    result = await agent.run("ship")
    assert result.output == "shipped"
    offered = {tool.name for tool in script.infos[0].function_tools}
    assert offered == {"write_todos", "read_todos", "tool_output_cache", "tool_output_cache_grep"}
