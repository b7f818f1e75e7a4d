"""What a ``PreToolUse`` hook answers Claude Code: the one place that spells the hook's output (allow, deny, ask, or
an input rewritten), for the library's hooks (approvals, parameter restrictions, web domain filters)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:  # claude-agent-sdk loads with the first request
    from claude_agent_sdk.types import HookJSONOutput

__all__ = ["deny", "pre_tool_use"]


def pre_tool_use(
    decision: Literal["allow", "deny", "ask"] | None = None,
    *,
    reason: str | None = None,
    updated_input: dict[str, Any] | None = None,
) -> HookJSONOutput:
    """A ``PreToolUse`` hook's answer: a permission ``decision`` with its ``reason``, and the call's input replaced by
    ``updated_input`` (each left out when ``None``)."""
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision is not None:
        output["permissionDecision"] = decision
    if reason is not None:
        output["permissionDecisionReason"] = reason
    if updated_input is not None:
        output["updatedInput"] = updated_input
    return cast("HookJSONOutput", {"hookSpecificOutput": output})


def deny(reason: str) -> HookJSONOutput:
    """The answer refusing a call; Claude sees ``reason``."""
    return pre_tool_use("deny", reason=reason)
