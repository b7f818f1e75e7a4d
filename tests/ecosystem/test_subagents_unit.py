"""The ``claude_code_agents`` setting as CLI options: definitions, tools, foreground subagents."""

from __future__ import annotations

import pytest
from pydantic_ai.exceptions import UserError

from claudecode_model._sessions.subagents import subagent_options
from claudecode_model.settings import ClaudeCodeModelSettings


def test_definitions_become_sdk_agents_run_in_the_foreground():
    settings: ClaudeCodeModelSettings = {
        "claude_code_agents": {
            "reader": {"description": "Reads", "prompt": "Read.", "tools": ["Read", "mcp__docs__search"]},
            "writer": {"description": "Writes", "prompt": "Write.", "model": "haiku", "max_turns": 3},
        }
    }

    options = subagent_options(settings, None)

    assert options.agents is not None
    reader, writer = options.agents["reader"], options.agents["writer"]
    assert (reader.description, reader.prompt, reader.tools, reader.background) == (
        "Reads",
        "Read.",
        ["Read", "mcp__docs__search"],
        False,
    )
    assert (writer.model, writer.maxTurns, writer.tools) == ("haiku", 3, None)
    assert options.builtin_tools == ["Agent", "Read"]  # a subagent only gets tools of its session
    assert options.allowed_tools == ["Agent", "Read", "mcp__docs__search"]
    assert options.env == {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}


@pytest.mark.parametrize("builtin", [["Agent"], ["Task", "Read"], "claude_code"])
def test_the_agent_tool_alone_also_runs_subagents_in_the_foreground(builtin: list[str] | str):
    options = subagent_options({}, builtin)

    assert options.agents is None
    assert options.env == {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}


def test_no_subagents_no_options():
    options = subagent_options({}, ["Read"])

    assert (options.agents, options.builtin_tools, options.allowed_tools, options.env) == (None, [], [], {})


def test_a_definition_without_a_prompt_names_the_subagent():
    with pytest.raises(UserError, match=r"claude_code_agents\['x'\] needs prompt"):
        subagent_options({"claude_code_agents": {"x": {"description": "d", "prompt": ""}}}, None)
