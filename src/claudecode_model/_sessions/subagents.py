"""Claude Code subagents: the ``claude_code_agents`` setting, and how subagent runs show in a response.

Claude starts a subagent with the CLI's ``Agent`` tool (``Task`` in older CLIs). The SDK messages of the
subagent's run carry ``parent_tool_use_id`` = the ``Agent`` call's id; its tool calls and their results become
native tool parts whose ``provider_details`` name that call (``"parent_tool_call_id"``).

Subagents run in the foreground: the CLI's default, background subagents, would outlive the request that started
them (the turn ends at once, and the CLI later starts turns of its own to report the result).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claudecode_model.exceptions import ClaudeCodeSettingsError
from claudecode_model.settings import ClaudeCodeModelSettings, SubagentDefinition

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition

__all__ = ["AGENT_TOOL_NAMES", "SubagentOptions", "subagent_options"]

AGENT_TOOL_NAMES = frozenset({"Agent", "Task"})
"""The CLI's names for the tool that starts a subagent."""

_NO_BACKGROUND_TASKS = "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"


@dataclass
class SubagentOptions:
    """What the subagent settings add to the CLI's options."""

    agents: dict[str, AgentDefinition] | None = None
    builtin_tools: list[str] = field(default_factory=list)
    """The ``Agent`` tool, and the built-in tools the subagents use (a subagent gets only tools of the session)."""
    allowed_tools: list[str] = field(default_factory=list)
    """The ``Agent`` tool and the tools the subagent definitions name."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment defaults (foreground subagents) when the ``Agent`` tool is available."""
    signature: Any = None
    """The definitions as plain data, for the session signature (``None`` without subagents)."""


def subagent_options(settings: ClaudeCodeModelSettings, builtin: list[str] | str | None) -> SubagentOptions:
    """The options for ``claude_code_agents``; ``builtin`` is the built-in tools setting (a list or a preset)."""
    definitions = settings.get("claude_code_agents") or {}
    options = SubagentOptions()
    if definitions:
        options.agents = {name: _definition(name, spec) for name, spec in definitions.items()}
        named = _named_tools(definitions)
        options.builtin_tools = ["Agent", *(tool for tool in named if not tool.startswith("mcp__"))]
        options.allowed_tools = ["Agent", *named]
        options.signature = {name: dict(spec) for name, spec in sorted(definitions.items())}
    has_agent_tool = bool(definitions) or builtin == "claude_code" or bool(AGENT_TOOL_NAMES & set(builtin or []))
    if has_agent_tool:
        options.env[_NO_BACKGROUND_TASKS] = "1"
    return options


def _definition(name: str, spec: SubagentDefinition) -> AgentDefinition:
    missing = [key for key in ("description", "prompt") if not spec.get(key)]
    if missing:
        raise ClaudeCodeSettingsError(f"claude_code_agents[{name!r}] needs {' and '.join(missing)}")
    from claude_agent_sdk import AgentDefinition

    tools = spec.get("tools")
    disallowed = spec.get("disallowed_tools")
    return AgentDefinition(
        description=spec["description"],
        prompt=spec["prompt"],
        tools=list(tools) if tools is not None else None,
        disallowedTools=list(disallowed) if disallowed is not None else None,
        model=spec.get("model"),
        maxTurns=spec.get("max_turns"),
        background=False,
    )


def _named_tools(definitions: Mapping[str, SubagentDefinition]) -> list[str]:
    names: list[str] = []
    for spec in definitions.values():
        names += [tool for tool in spec.get("tools") or [] if tool not in names]
    return names
