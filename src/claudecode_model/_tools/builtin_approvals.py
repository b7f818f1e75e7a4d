"""Approving Claude Code's built-in tool calls: pydantic-ai's approvals, or a policy deciding in code.

The agent names the built-in tools that need approval with :class:`~claudecode_model.BuiltinToolApprovals`, a
toolset whose tools stand for them (each ``ToolDefinition`` carries :data:`APPROVAL_TOOL_KEY` in its metadata and
requires approval). Such a definition is not served over MCP: the tool is enabled in the CLI, and a ``PreToolUse``
hook holds each of its calls until it has a decision, keyed by the call's ``tool_use`` id on the session's
:class:`~claudecode_model._tools.parked_calls.CallResults`, exactly as a waiting MCP handler does. Claude's call reaches
pydantic-ai as a plain ``ToolCallPart``, the run ends with ``DeferredToolRequests``, and the answer of the next
request (approved, possibly with changed arguments, or denied) is the hook's permission decision: ``allow`` with
the approved input, or ``deny`` with the denial's message. The CLI then runs the call (or tells Claude it was
denied), and its result is reported in the next response as a native tool return.

A policy (the ``claude_code_builtin_tool_policy`` setting) decides in code instead: once per call, first come
first served between the hook and the stream translator (:class:`BuiltinGate`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from mcp.types import CallToolResult, TextContent
from pydantic_ai.messages import ModelRequestPart, RetryPromptPart, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import ToolApproved, ToolDefinition, ToolDenied

from claudecode_model._history.details import CLI_TOOL_NAME_KEY
from claudecode_model._tools.restrictions import ToolParameterRestrictions, forbidden_argument
from claudecode_model.builtin_tools import APPROVAL_TOOL_KEY, APPROVED_INPUT_KEY
from claudecode_model.settings import BuiltinToolPolicy, PolicyDecision

__all__ = [
    "APPROVAL_HOOK_TIMEOUT",
    "ApprovalPlan",
    "BuiltinGate",
    "approval_result",
    "approval_tool_names",
    "is_approval_tool",
    "is_builtin_call",
    "not_run_result",
]

logger = logging.getLogger(__name__)

APPROVAL_HOOK_TIMEOUT = 7 * 24 * 3600.0
"""Seconds the CLI lets the approval hook wait (the CLI's default is 60). The wait is bounded by the parked turn's
lifetime (``session_idle_timeout``) instead: a turn closed on expiry answers the hook at once."""

_NO_APPROVAL_TEXT = "The call of {name} was not approved."
_NOT_RUN_TEXT = (
    "The call of {name} was approved, but the Claude Code session waiting for the approval ended before it ran "
    "(only the last call of a reply is taken up again). Call the tool again to run it."
)


def is_approval_tool(tool_def: ToolDefinition) -> bool:
    """Whether ``tool_def`` stands for a built-in tool that needs approval."""
    return bool(tool_def.metadata) and isinstance((tool_def.metadata or {}).get(APPROVAL_TOOL_KEY), str)


def approval_tool_names(tool_defs: Sequence[ToolDefinition]) -> tuple[str, ...]:
    """The built-in tools the definitions stand for, in order."""
    return tuple(
        dict.fromkeys(str((tool.metadata or {})[APPROVAL_TOOL_KEY]) for tool in tool_defs if is_approval_tool(tool))
    )


def is_builtin_call(call: ToolCallPart) -> bool:
    """Whether ``call`` (a pending call of a history) is a call of a built-in tool, not of an MCP tool (a call
    without the CLI's name recorded counts as an MCP call: that is what the agent's own tools are)."""
    cli_name = (call.provider_details or {}).get(CLI_TOOL_NAME_KEY)
    return isinstance(cli_name, str) and not cli_name.startswith("mcp__")


def _text_result(text: str, *, is_error: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def approval_result(call: ToolCallPart, answer: ModelRequestPart) -> CallToolResult:
    """pydantic-ai's answer to a built-in call as the decision the approval hook reads: an approval carries the
    input to run it with (``structuredContent``), anything else is a denial with its text."""
    if isinstance(answer, ToolReturnPart):
        approved = answer.metadata.get(APPROVED_INPUT_KEY) if isinstance(answer.metadata, dict) else None
        if answer.outcome == "success" and isinstance(approved, dict):
            return CallToolResult(
                content=[TextContent(type="text", text=answer.model_response_str())],
                structured_content={"updated_input": approved},
            )
        if answer.outcome == "success":
            return _text_result(_NO_APPROVAL_TEXT.format(name=call.tool_name), is_error=True)
        return _text_result(answer.model_response_str(), is_error=True)
    if isinstance(answer, RetryPromptPart):
        return _text_result(answer.model_response(), is_error=True)
    return _text_result(_NO_APPROVAL_TEXT.format(name=call.tool_name), is_error=True)


def not_run_result(call: ToolCallPart, answer: ModelRequestPart | None) -> CallToolResult:
    """The result a replayed transcript gives a built-in call that is not taken up again: a denial's text, or an
    error saying the approved call did not run."""
    decision = approval_result(call, answer) if answer is not None else None
    if decision is not None and decision.is_error:
        return decision
    return _text_result(_NOT_RUN_TEXT.format(name=call.tool_name), is_error=True)


@dataclass(frozen=True)
class ApprovalPlan:
    """The approvals of a request's built-in tool calls."""

    tools: tuple[str, ...] = ()
    """Built-in tools whose calls pydantic-ai approves (the run ends with ``DeferredToolRequests``)."""
    policy: BuiltinToolPolicy | None = None
    """Decides in code, before pydantic-ai is asked."""
    restrictions: ToolParameterRestrictions | None = None
    """The request's tool parameter restrictions: a call they deny is left to their hook."""

    def __bool__(self) -> bool:
        return bool(self.tools) or self.policy is not None

    @property
    def signature(self) -> list[Any]:
        """What fixes a CLI session's behaviour (the policy by identity)."""
        return [list(self.tools), repr(self.policy) if self.policy is not None else None]

    def forbidden(self, cli_name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether a tool parameter restriction denies the call."""
        return bool(self.restrictions) and forbidden_argument(self.restrictions or {}, cli_name, arguments) is not None


@dataclass
class BuiltinGate:
    """One CLI session's decisions on built-in calls: the policy's (asked once per call) and pydantic-ai's (waited
    for on the session's call results)."""

    plan: ApprovalPlan
    _decided: dict[str, PolicyDecision] = field(default_factory=dict)

    def policy_decision(self, call_id: str, cli_name: str, arguments: dict[str, Any]) -> PolicyDecision:
        """The policy's decision on a call, asked once (the hook and the translator may both ask)."""
        if call_id in self._decided:
            return self._decided[call_id]
        decision: PolicyDecision = None
        policy = self.plan.policy
        if policy is not None and not cli_name.startswith("mcp__"):
            try:
                decision = policy(ToolCallPart(tool_name=cli_name, args=dict(arguments), tool_call_id=call_id))
            except Exception as error:
                logger.exception("the built-in tool policy failed on a call of %s: the call is denied", cli_name)
                decision = ToolDenied(f"The call of {cli_name} was denied: the approval policy failed ({error}).")
            if not isinstance(decision, ToolApproved | ToolDenied | bool | None):
                logger.error("the built-in tool policy returned %r for a call of %s: denied", decision, cli_name)
                decision = ToolDenied(f"The call of {cli_name} was denied: the approval policy gave no valid answer.")
        self._decided[call_id] = decision
        return decision

    def settled(self, cli_name: str, arguments: dict[str, Any], call_id: str) -> bool:
        """Whether a call of a tool needing approval is decided without pydantic-ai (by a restriction or the
        policy): it is then reported as a native call."""
        if self.plan.forbidden(cli_name, arguments):
            return True
        return cli_name in self.plan.tools and self.policy_decision(call_id, cli_name, arguments) is not None

    def hooks(self, wait: Callable[[str], Any]) -> dict[str, list[Any]]:
        """The ``PreToolUse`` hook holding each built-in call until it is decided; ``wait(tool_use_id)`` awaits
        pydantic-ai's answer (a :class:`CallToolResult` made by :func:`approval_result`)."""
        from claude_agent_sdk import HookMatcher
        from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput

        async def decide(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
            if hook_input["hook_event_name"] != "PreToolUse":
                return {}
            name, arguments = hook_input["tool_name"], dict(hook_input["tool_input"])
            if name.startswith("mcp__") or tool_use_id is None:
                return {}
            if self.plan.forbidden(name, arguments):
                return {}  # the restriction hook denies it
            decision = self.policy_decision(tool_use_id, name, arguments)
            if decision is None and name in self.plan.tools:
                logger.debug("the call %s of %s waits for pydantic-ai's approval", tool_use_id, name)
                result: CallToolResult = await wait(tool_use_id)
                if result.is_error:
                    decision = ToolDenied(_result_text(result))
                else:
                    approved = (result.structured_content or {}).get("updated_input")
                    decision = ToolApproved(override_args=approved if isinstance(approved, dict) else None)
            return cast("HookJSONOutput", _permission_output(decision, name, arguments))

        return {"PreToolUse": [HookMatcher(matcher=None, hooks=[cast(Any, decide)], timeout=APPROVAL_HOOK_TIMEOUT)]}


def _result_text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _permission_output(decision: PolicyDecision, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    match decision:
        case None:
            return {}
        case True:
            return _allow(arguments)
        case False:
            return _deny(ToolDenied().message)
        case ToolApproved(override_args=override):
            return _allow(override if override is not None else arguments)
        case ToolDenied(message=message):
            logger.info("denied a call of %s: %s", name, message)
            return _deny(message)


def _allow(arguments: dict[str, Any]) -> dict[str, Any]:
    output = {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": arguments}
    return {"hookSpecificOutput": output}


def _deny(message: str) -> dict[str, Any]:
    output = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": message}
    return {"hookSpecificOutput": output}
