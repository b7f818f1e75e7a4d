"""Claude Code's built-in tools under pydantic-ai's approvals.

:class:`BuiltinToolApprovals` names the built-in tools (``Bash``, ``Edit``, ``Write``, ...) whose calls need
approval. Add it to the agent's toolsets: a call to one of them ends the run with ``DeferredToolRequests`` (the call
in ``approvals``, with Claude's input as its arguments) while the Claude Code turn waits; ``DeferredToolResults`` with
``ToolApproved`` (optionally ``override_args``) or ``ToolDenied`` continue it. See ``docs/builtin-tools.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import FunctionToolset, Tool
from pydantic_ai.messages import ToolReturn

from claudecode_model.exceptions import ClaudeCodeSettingsError

__all__ = ["APPROVAL_TOOL_KEY", "APPROVED_INPUT_KEY", "BuiltinToolApprovals"]

APPROVAL_TOOL_KEY = "claude_code_builtin_tool"
"""``ToolDefinition.metadata`` key: the definition stands for this Claude Code built-in tool, which needs approval."""

APPROVED_INPUT_KEY = "claude_code_approved_input"
"""``ToolReturnPart.metadata`` key of an approved built-in call: the input Claude Code runs it with."""

_ANY_INPUT: dict[str, Any] = {"type": "object", "additionalProperties": True}


def _approved(name: str) -> Any:
    def approved(**arguments: Any) -> ToolReturn:
        return ToolReturn(
            return_value=f"Approved: Claude Code runs this call of {name}.",
            metadata={APPROVED_INPUT_KEY: arguments},
        )

    return approved


class BuiltinToolApprovals(FunctionToolset[Any]):
    """A toolset that makes calls of Claude Code built-in tools wait for pydantic-ai's approval.

    The tools are enabled in Claude Code (there is no need to list them in ``claude_code_builtin_tools`` too) and are
    not offered to Claude a second time: each call Claude makes to one of them comes back to the agent as a call
    of the tool of the same name that requires approval. An approved call runs in Claude Code with the approved
    arguments; its output is reported in the next response as a native tool return. With a model other than
    ``ClaudeCodeModel`` the tools would be offered as ordinary tools that do nothing: use this toolset with it only.
    """

    def __init__(self, tools: Sequence[str], *, id: str | None = None) -> None:
        """``tools``: built-in tool names, as Claude Code spells them (``"Bash"``, ``"Edit"``, ``"WebFetch"``)."""
        if isinstance(tools, str) or not all(isinstance(name, str) and name for name in tools):
            raise ClaudeCodeSettingsError(
                f"Invalid BuiltinToolApprovals tools={tools!r}: it must be a list of built-in tool names."
            )
        if mcp := [name for name in tools if name.startswith("mcp__")]:
            raise ClaudeCodeSettingsError(
                f"Invalid BuiltinToolApprovals tools: {mcp} are MCP tools; give the agent's own tools "
                "requires_approval=True instead."
            )
        made: list[Tool[Any]] = []
        for name in dict.fromkeys(tools):
            tool: Tool[Any] = Tool.from_schema(
                _approved(name),
                name=name,
                description=f"Claude Code's built-in {name} tool (runs in Claude Code once approved).",
                json_schema=_ANY_INPUT,
            )
            tool.requires_approval = True
            tool.metadata = {APPROVAL_TOOL_KEY: name}
            made.append(tool)
        super().__init__(made, id=id)
        self.tool_names: tuple[str, ...] = tuple(tool.name for tool in made)
        """The built-in tools whose calls need approval."""
