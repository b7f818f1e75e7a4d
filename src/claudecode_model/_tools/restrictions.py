"""``claude_code_tool_parameter_restrictions``: deny tool calls whose arguments have forbidden values.

The check runs as a ``PreToolUse`` hook rather than in ``can_use_tool``: the CLI consults ``can_use_tool`` only for
calls that need a permission decision, so a tool granted by ``allowed_tools`` (or a Bash command the CLI deems
read-only) would bypass it. A hook sees every call; a denied call is not run and Claude gets the reason as the
tool's error result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from claude_agent_sdk import HookMatcher
from claude_agent_sdk.types import HookCallback, HookContext, HookInput, HookJSONOutput

from claudecode_model._tools.hook_output import deny

__all__ = ["ToolParameterRestrictions", "forbidden_argument", "restriction_hooks"]

logger = logging.getLogger(__name__)

ToolParameterRestrictions = Mapping[str, Mapping[str, Any]]
"""Tool name → argument name → forbidden value, or a predicate that returns ``True`` for forbidden values."""


def forbidden_argument(
    restrictions: ToolParameterRestrictions, tool_name: str, arguments: Mapping[str, Any]
) -> str | None:
    """Why this call is denied (naming the argument and value), or ``None`` when it may run.

    A restriction applies under the tool's CLI name (``"Bash"``, ``"mcp__pydantic_tools__search"``) or, for an
    MCP tool, its own name (``"search"``).
    """
    names = [tool_name]
    if tool_name.startswith("mcp__"):
        names.append(tool_name.rsplit("__", 1)[-1])
    for name in names:
        for argument, forbidden in (restrictions.get(name) or {}).items():
            if argument not in arguments:
                continue
            value = arguments[argument]
            if _matches(forbidden, value):
                return f"{argument}={value!r} is not allowed for {name} (a tool parameter restriction of this agent)."
    return None


def _matches(forbidden: Any, value: Any) -> bool:
    if callable(forbidden):
        return bool(cast("Callable[[Any], object]", forbidden)(value))
    return bool(forbidden == value)


def restriction_hooks(restrictions: ToolParameterRestrictions) -> dict[str, list[HookMatcher]]:
    """``ClaudeAgentOptions.hooks`` that deny every call breaking ``restrictions``."""

    async def check(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if hook_input["hook_event_name"] != "PreToolUse":
            return {}
        reason = forbidden_argument(restrictions, hook_input["tool_name"], hook_input["tool_input"])
        if reason is None:
            return {}
        logger.info("denied a call of %s: %s", hook_input["tool_name"], reason)
        return deny(reason)

    callback: HookCallback = check
    return {"PreToolUse": [HookMatcher(matcher=None, hooks=[callback])]}
