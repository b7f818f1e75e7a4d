"""Claude Code subagents through the real CLI: defined by a setting, shown as native parts linked to their parent."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend
from tests._support.brains import subagent_conversation
from tests._support.responses import started_parts

pytestmark = pytest.mark.cli

SUBAGENT_PROMPT = "You are the note reader. Read the notes you are given and report what they say."


def subagent_brain(notes: Path):
    """Claude: start the note-reader subagent, then answer with its report. The subagent: read the notes, report."""

    return subagent_conversation(
        SUBAGENT_PROMPT,
        [TextPart("Reading."), ToolCallPart("Read", {"file_path": str(notes)})],
        {"description": "Read notes", "prompt": f"Read {notes}", "subagent_type": "note-reader"},
    )


def _settings(tmp_path: Path) -> ClaudeCodeModelSettings:
    return {
        "claude_code_cwd": tmp_path,
        "claude_code_agents": {
            "note-reader": {"description": "Reads notes and reports", "prompt": SUBAGENT_PROMPT, "tools": ["Read"]}
        },
    }


async def test_subagent_calls_are_native_parts_linked_to_the_agent_call(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the treasure is under the oak\n")
    claude_backend.set_brain(FunctionModel(subagent_brain(notes)))
    agent = Agent(model, model_settings=_settings(tmp_path))

    events = []
    async with agent.run_stream_events("What do the notes say?") as stream:
        async for event in stream:
            events.append(event)

    [result] = [event.result for event in events if isinstance(event, AgentRunResultEvent)]
    assert "REPORT:" in result.output
    assert "the treasure is under the oak" in result.output
    main, sub_first, sub_second, main_after = claude_backend.requests
    assert set(main.tool_names) == {"Agent", "Read"}  # a subagent's tools are tools of the session
    assert sub_first.tool_names == ["Read"]
    assert SUBAGENT_PROMPT in sub_first.system
    assert "the treasure is under the oak" in sub_second.tool_results()[0].text
    assert "REPORT:" in main_after.tool_results()[0].text

    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    native = [part for part in response.parts if isinstance(part, NativeToolCallPart | NativeToolReturnPart)]
    kinds = [(type(part).__name__, part.tool_name) for part in native]
    assert kinds == [
        ("NativeToolCallPart", "Agent"),
        ("NativeToolCallPart", "Read"),
        ("NativeToolReturnPart", "Read"),
        ("NativeToolReturnPart", "Agent"),
    ]
    agent_call, read_call, read_return, agent_return = native
    assert isinstance(agent_call, NativeToolCallPart)
    assert isinstance(read_call, NativeToolCallPart)
    assert isinstance(read_return, NativeToolReturnPart)
    assert isinstance(agent_return, NativeToolReturnPart)
    parent = agent_call.tool_call_id
    assert "parent_tool_call_id" not in (agent_call.provider_details or {})
    assert (read_call.provider_details or {})["parent_tool_call_id"] == parent
    assert (read_return.provider_details or {})["parent_tool_call_id"] == parent
    assert read_call.args_as_dict() == {"file_path": str(notes)}
    assert read_return.tool_call_id == read_call.tool_call_id
    assert "the treasure is under the oak" in str(read_return.content)
    assert agent_return.tool_call_id == parent
    assert "REPORT:" in str(agent_return.content)
    started = started_parts(events)
    streamed_read = [part for part in started if isinstance(part, NativeToolCallPart) and part.tool_name == "Read"]
    assert [(part.provider_details or {}).get("parent_tool_call_id") for part in streamed_read] == [parent]

    # The history, subagent parts included, continues in a new CLI session (replay), where they are left out.
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("noted")])))
    again = await Agent(ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0)).run(
        "Thanks",
        message_history=result.all_messages(),
        model_settings=ClaudeCodeModelSettings({**_settings(tmp_path), "claude_code_session": "new"}),
    )
    assert again.output == "noted"
    assert [call.tool_name for call in claude_backend.last_request.tool_calls()] == ["Agent"]


async def test_a_subagent_calls_one_of_the_agents_tools(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    looker = "You are the looker. Look the key up with the lookup tool."

    brain = subagent_conversation(
        looker,
        [ToolCallPart("mcp__pydantic_tools__lookup", {"key": "colour"})],
        {"description": "Look up", "prompt": "Look up the colour", "subagent_type": "looker"},
    )
    claude_backend.set_brain(FunctionModel(brain))
    settings: ClaudeCodeModelSettings = {
        "claude_code_timeout": 60,
        "claude_code_agents": {
            "looker": {"description": "Looks keys up", "prompt": looker, "tools": ["mcp__pydantic_tools__lookup"]}
        },
    }
    agent = Agent(model, model_settings=settings)
    looked_up: list[str] = []

    @agent.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        looked_up.append(key)
        return f"{key} is teal"

    result = await agent.run("What colour?")

    assert looked_up == ["colour"]
    assert "colour is teal" in result.output
    parts = [part for message in result.all_messages() if isinstance(message, ModelResponse) for part in message.parts]
    [agent_call] = [part for part in parts if isinstance(part, NativeToolCallPart) and part.tool_name == "Agent"]
    calls = [part for part in parts if isinstance(part, ToolCallPart | NativeToolCallPart)]
    [lookup_call] = [part for part in calls if part.tool_name == "lookup"]
    assert (lookup_call.provider_details or {})["parent_tool_call_id"] == agent_call.tool_call_id


async def test_a_subagent_needs_a_description_and_prompt(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(
        model,
        model_settings=ClaudeCodeModelSettings({"claude_code_agents": {"bad": {"description": "", "prompt": "p"}}}),
    )

    with pytest.raises(UserError, match=r"claude_code_agents\['bad'\] needs description"):
        await agent.run("hi")

    assert claude_backend.requests == []
