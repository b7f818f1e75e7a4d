"""The names of Claude Code's built-in tools, for checking ``claude_code_builtin_tools`` and ``run --tools``.

The CLI drops a name it does not know without a word, and Claude then has no tools: a typo (``Reed``) or the wrong
case (``read``) must be refused before anything starts.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["BUILTIN_TOOLS", "EARLIER_BUILTIN_TOOLS", "unknown_builtin_tools"]

BUILTIN_TOOLS = frozenset(
    {
        "Bash",
        "CronCreate",
        "CronDelete",
        "CronList",
        "Edit",
        "EnterWorktree",
        "ExitWorktree",
        "Glob",
        "Grep",
        "ListAgents",
        "Monitor",
        "NotebookEdit",
        "Read",
        "ReportFindings",
        "ScheduleWakeup",
        "SendMessage",
        "Skill",
        "Task",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskStop",
        "TaskUpdate",
        "WebFetch",
        "WebSearch",
        "Workflow",
        "Write",
    }
)
"""What the bundled CLI enables by these names (``tests/model/test_builtin_tools_cli.py`` checks it does)."""

EARLIER_BUILTIN_TOOLS = frozenset(
    {
        "Agent",
        "AskUserQuestion",
        "BashOutput",
        "EnterPlanMode",
        "ExitPlanMode",
        "KillShell",
        "LS",
        "LSP",
        "ListMcpResourcesTool",
        "MultiEdit",
        "NotebookRead",
        "ReadMcpResourceTool",
        "SlashCommand",
        "TaskOutput",
        "TodoWrite",
        "ToolSearch",
    }
)
"""Names of other CLI versions (or of tools the CLI offers only in some modes): accepted, for a ``cli_path`` CLI."""


def unknown_builtin_tools(names: Iterable[str]) -> str | None:
    """What is wrong with ``names`` as built-in tool names (``None`` if nothing): the unknown ones, each with its
    close match, and the valid names."""
    known = BUILTIN_TOOLS | EARLIER_BUILTIN_TOOLS
    unknown = [name for name in names if name and name not in known and not name.startswith("mcp__")]
    if not unknown:
        return None
    by_folded = {name.casefold(): name for name in known}
    described = []
    for name in unknown:
        match = by_folded.get(name.casefold()) or next(iter(difflib.get_close_matches(name, known, n=1)), None)
        described.append(f"{name!r} (did you mean {match!r}?)" if match else repr(name))
    return (
        f"unknown Claude Code built-in tool {', '.join(described)}; names are case-sensitive: "
        f"{', '.join(sorted(BUILTIN_TOOLS))}"
    )
