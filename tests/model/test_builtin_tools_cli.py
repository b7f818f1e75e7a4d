"""Claude Code's built-in tools through the real CLI: opt-in, visible as native tool parts, and restrictable."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelRequest,
    NativeToolCallPart,
    NativeToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, ClaudeCodeSettingsError
from claudecode_model._tools.builtin_names import BUILTIN_TOOLS
from claudecode_model._tools.restrictions import ToolParameterRestrictions, forbidden_argument
from claudecode_model.testing import OfflineBackend
from tests._support.brains import calls_then_results
from tests._support.responses import details, native_parts, started_native_kinds

pytestmark = pytest.mark.cli


async def test_builtin_read_runs_and_shows_as_native_tool_parts(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the treasure is under the oak\n")
    claude_backend.set_brain(FunctionModel(calls_then_results(("Read", {"file_path": str(notes)}))))
    settings: ClaudeCodeModelSettings = {"claude_code_builtin_tools": ["Read"], "claude_code_cwd": tmp_path}
    agent = Agent(model, model_settings=settings)

    events = []
    async with agent.run_stream_events("What do my notes say?") as stream:
        async for event in stream:
            events.append(event)
    result = await agent.run("And again?")

    assert "the treasure is under the oak" in result.output
    assert "Read" in claude_backend.requests[0].tool_names
    [call], [returned] = native_parts(result.all_messages()[-1])
    assert (call.tool_name, call.args_as_dict()) == ("Read", {"file_path": str(notes)})
    assert "the treasure is under the oak" in str(returned.content)
    assert returned.outcome == "success"
    assert started_native_kinds(events, "Read") == {NativeToolCallPart, NativeToolReturnPart}


async def test_builtin_tools_are_off_unless_enabled(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(calls_then_results()))
    agent = Agent(model)

    @agent.tool_plain
    def mine() -> str:
        return "ok"

    await agent.run("hi")

    assert claude_backend.requests[0].tool_names == ["mcp__pydantic_tools__mine"]


async def test_agent_tools_stay_direct_next_to_builtin_tools(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(calls_then_results(("mcp__pydantic_tools__mine", {}))))
    agent = Agent(
        model, model_settings=ClaudeCodeModelSettings({"claude_code_builtin_tools": ["Read", "Grep", "Glob", "Bash"]})
    )

    @agent.tool_plain
    def mine() -> str:
        return "ok"

    result = await agent.run("hi")

    names = claude_backend.requests[0].tool_names
    assert {"Read", "Grep", "Glob", "Bash", "mcp__pydantic_tools__mine"} <= set(names)
    assert "ToolSearch" not in names
    assert result.output == "ok"


async def test_restricted_bash_parameter_is_denied_and_claude_is_told_why(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    marker = tmp_path / "ran"
    bash_call = {"command": f"touch {marker}", "description": "touch", "run_in_background": True}
    claude_backend.set_brain(FunctionModel(calls_then_results(("Bash", bash_call))))
    settings: ClaudeCodeModelSettings = {
        "claude_code_builtin_tools": ["Bash"],
        "claude_code_cwd": tmp_path,
        "claude_code_tool_parameter_restrictions": {"Bash": {"run_in_background": True}},
    }
    agent = Agent(model, model_settings=settings)

    result = await agent.run("Start it in the background.")

    assert not marker.exists()
    [tool_result] = claude_backend.requests[-1].tool_results()
    assert tool_result.is_error
    assert "run_in_background=True is not allowed for Bash" in tool_result.text
    response = result.all_messages()[-1]
    _, [denied] = native_parts(response)
    assert denied.outcome == "failed"
    assert [d["tool_name"] for d in details(response)["permission_denials"]] == ["Bash"]


async def test_predicate_restriction_on_the_agents_own_tool(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain(
        FunctionModel(
            calls_then_results(
                ("mcp__pydantic_tools__delete", {"path": "/etc"}), ("mcp__pydantic_tools__delete", {"path": "tmp/x"})
            )
        )
    )
    deleted: list[str] = []
    settings: ClaudeCodeModelSettings = {
        "claude_code_tool_parameter_restrictions": {"delete": {"path": lambda path: str(path).startswith("/")}}
    }
    agent = Agent(model, model_settings=settings)

    @agent.tool_plain
    def delete(path: str) -> str:
        deleted.append(path)
        return f"deleted {path}"

    result = await agent.run("clean up")

    assert deleted == ["tmp/x"]
    assert "path='/etc' is not allowed for delete" in result.output
    assert "deleted tmp/x" in result.output


def test_forbidden_argument_matching_rules():
    restrictions: ToolParameterRestrictions = {
        "Bash": {"run_in_background": True},
        "search": {"depth": lambda depth: depth == "advanced"},
    }

    assert forbidden_argument(restrictions, "Bash", {"command": "ls", "run_in_background": True})
    assert forbidden_argument(restrictions, "Bash", {"command": "ls", "run_in_background": False}) is None
    assert forbidden_argument(restrictions, "Bash", {"command": "ls"}) is None
    assert forbidden_argument(restrictions, "Read", {"run_in_background": True}) is None
    assert forbidden_argument(restrictions, "mcp__pydantic_tools__search", {"depth": "advanced"})
    assert forbidden_argument(restrictions, "mcp__pydantic_tools__search", {"depth": "basic"}) is None


@pytest.mark.parametrize(("names", "suggested"), [(["Reed"], "Read"), (["read"], "Read"), (["Grep", "glob"], "Glob")])
async def test_unknown_builtin_tool_names_are_refused_before_anything_starts(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, names: list[str], suggested: str
):
    agent = Agent(model, model_settings=ClaudeCodeModelSettings(claude_code_builtin_tools=names))

    with pytest.raises(ClaudeCodeSettingsError, match=rf"did you mean {suggested!r}\?.*case-sensitive: Bash, "):
        await agent.run("hello")

    assert claude_backend.requests == []


async def test_every_known_builtin_tool_name_is_one_the_bundled_cli_enables(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain("hello")  # a text answer: no tool is run
    result = await model.request_with_metadata(
        [ModelRequest.user_text_prompt("hello")],
        ClaudeCodeModelSettings(claude_code_builtin_tools=sorted(BUILTIN_TOOLS), claude_code_cwd=tmp_path),
    )

    assert set(result.init["tools"]) >= BUILTIN_TOOLS
