"""Approving Claude Code's built-in tool calls: pydantic-ai's approvals, or a policy deciding in code.

The agent names the built-in tools that need approval with :class:`~claudecode_model.BuiltinToolApprovals`, a
toolset whose tools stand for them (each ``ToolDefinition`` carries :data:`APPROVAL_TOOL_KEY` in its metadata and
requires approval). Such a definition is not served over MCP: the tool is enabled in the CLI but never allowed by a
rule, so that Claude Code asks before every call, and the answer comes from this module, keyed by the call's
``tool_use`` id on the session's :class:`~claudecode_model._tools.parked_calls.CallResults` exactly as a waiting MCP
handler gets its result. Claude's call reaches pydantic-ai as a plain ``ToolCallPart``, the run ends with
``DeferredToolRequests``, and the answer of the next request (approved, possibly with changed arguments, or denied)
is the permission decision: allowed with the approved input, or denied with the person's message, which Claude gets
as the call's error result, word for word.

Two of the CLI's mechanisms carry the decision (:class:`BuiltinGate`):

- a ``PreToolUse`` hook sees every call first and answers ``ask`` for the calls a person or the policy decides,
  which makes Claude Code ask even where its permission mode or a rule would let the call run;
- the ``can_use_tool`` callback is what Claude Code asks: it waits for pydantic-ai's answer and returns it.

Both are needed. The hook reaches the CLI with the SDK's ``initialize`` request, which a CLI resumed at a deferred
call does not wait for: it may re-run the call before the hook exists. ``can_use_tool`` is on the command line
(``--permission-prompt-tool stdio``) and the CLI waits for its answer, so with the call never allowed by a rule and a
permission mode that asks (:func:`cli_permission_mode`), no call of a tool under approval runs without a decision
from here. ``can_use_tool`` alone would not do: modes such as ``acceptEdits`` let calls run without asking.

A policy (the ``claude_code_builtin_tool_policy`` setting) decides in code instead: once per call, first come
first served between the hook and the stream translator.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai.messages import ModelRequestPart, RetryPromptPart, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import ToolApproved, ToolDefinition, ToolDenied

from claudecode_model._history.details import CLI_TOOL_NAME_KEY
from claudecode_model._tools.call_results import block_texts
from claudecode_model._tools.core import McpResponse, text_result
from claudecode_model._tools.hook_output import pre_tool_use
from claudecode_model._tools.restrictions import ToolParameterRestrictions, forbidden_argument
from claudecode_model.builtin_tools import APPROVAL_TOOL_KEY, APPROVED_INPUT_KEY
from claudecode_model.exceptions import BuiltinDecisionError
from claudecode_model.settings import BuiltinToolPolicy, PolicyDecision

__all__ = [
    "ApprovalPlan",
    "BuiltinGate",
    "approval_result",
    "approval_tool_names",
    "approved_call_to_take_up",
    "check_permission_mode_for_taken_up_call",
    "cli_permission_mode",
    "is_approval_tool",
    "is_approved",
    "is_builtin_call",
    "not_approved_result",
]

logger = logging.getLogger(__name__)

_NO_APPROVAL_TEXT = "The call of {name} was not approved."
_NOT_ALLOWED_TEXT = "Permission to use {name} was denied: the tool is not allowed in this session."

_ASKING_MODES = frozenset({"default", "dontAsk"})
"""The permission modes in which Claude Code asks ``can_use_tool`` about every call no rule allows (``dontAsk``
after :func:`cli_permission_mode` turned it into ``default``). Other modes let some calls run unasked."""


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


def approval_result(call: ToolCallPart, answer: ModelRequestPart) -> McpResponse:
    """pydantic-ai's answer to a built-in call as the decision the approval hook reads: an approval carries the
    input to run it with (``structuredContent``), anything else is a denial with its text."""
    if isinstance(answer, ToolReturnPart):
        approved = answer.metadata.get(APPROVED_INPUT_KEY) if isinstance(answer.metadata, dict) else None
        if answer.outcome == "success" and isinstance(approved, dict):
            approval = text_result(answer.model_response_str())
            approval["structuredContent"] = {"updated_input": approved}
            return approval
        if answer.outcome == "success":
            return text_result(_NO_APPROVAL_TEXT.format(name=call.tool_name), is_error=True)
        return text_result(answer.model_response_str(), is_error=True)
    if isinstance(answer, RetryPromptPart):
        return text_result(answer.model_response(), is_error=True)
    return not_approved_result(call)


def not_approved_result(call: ToolCallPart) -> McpResponse:
    """The result of a built-in call that pydantic-ai gave no answer: it was not approved, so it did not run."""
    return text_result(_NO_APPROVAL_TEXT.format(name=call.tool_name), is_error=True)


def is_approved(call: ToolCallPart, answer: ModelRequestPart | None) -> bool:
    """Whether pydantic-ai's ``answer`` approves the built-in ``call``."""
    return answer is not None and not approval_result(call, answer).get("isError", False)


def cli_permission_mode(mode: str, approvals: ApprovalPlan) -> str:
    """The permission mode the CLI runs with: ``dontAsk`` becomes ``default`` when calls wait for approval, so that
    Claude Code asks ``can_use_tool`` (which refuses whatever ``dontAsk`` would refuse) instead of refusing the
    calls of the tools under approval by itself (see the module's docstring)."""
    return "default" if approvals.tools and mode == "dontAsk" else mode


def approved_call_to_take_up(
    calls: Sequence[ToolCallPart], answers: Mapping[str, ModelRequestPart], *, prompt: bool
) -> ToolCallPart | None:
    """The approved built-in call a new CLI session takes up, if any; refused before anything starts when the
    decisions cannot be carried out as given: Claude Code takes up one call of a reply when it resumes a session, and
    only without a new message. So at most one approved built-in call can run there, and none with a new prompt."""
    approved = [call for call in calls if is_builtin_call(call) and is_approved(call, answers.get(call.tool_call_id))]
    if len(approved) > 1:
        names = ", ".join(call.tool_name for call in approved)
        raise BuiltinDecisionError(
            f"{len(approved)} approved calls of Claude Code's built-in tools ({names}) cannot all run: "
            "the Claude Code turn that waited for them is gone (another model instance, a restart, or the turn "
            "expired after session_idle_timeout), and a new session takes up only one call of a reply. Continue on "
            "the model whose turn waits, or approve one of them and deny the others."
        )
    if approved and prompt:
        raise BuiltinDecisionError(
            f"The approved call of {approved[0].tool_name} cannot run along with a new prompt: the Claude Code turn "
            "that waited for it is gone (another model instance, a restart, or the turn expired), and a new session "
            "runs it only when resumed without a new message. Send the approval without a user prompt, then the "
            "prompt in the next run."
        )
    return approved[0] if approved else None


def check_permission_mode_for_taken_up_call(mode: str) -> None:
    """Refuse taking up a built-in call in a new session under a permission mode that may run it unasked."""
    if mode not in _ASKING_MODES:
        raise BuiltinDecisionError(
            f"A decision on a call of Claude Code's built-in tools cannot be carried out in a new session under "
            f"claude_code_permission_mode={mode!r}: that mode may run the call before the decision is applied. "
            "Use 'dontAsk' (the default) or 'default', or continue on the model whose turn waits."
        )


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

    def hooks(self) -> dict[str, list[Any]]:
        """The ``PreToolUse`` hook answering ``ask`` for each call a person or the policy decides: the decision is
        then :meth:`can_use_tool`'s, even where a permission mode or a rule would let the call run unasked. A call
        the policy approves is allowed here (with the policy's input)."""
        from claude_agent_sdk import HookMatcher
        from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput

        async def decide(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
            if hook_input["hook_event_name"] != "PreToolUse":
                return {}
            name, arguments = hook_input["tool_name"], dict(hook_input["tool_input"])
            if name.startswith("mcp__") or tool_use_id is None or self.plan.forbidden(name, arguments):
                return {}  # an MCP tool of the agent, or the restriction hook denies it
            decision = self.policy_decision(tool_use_id, name, arguments)
            if decision is None and name not in self.plan.tools:
                return {}  # Claude Code's own rules decide
            if decision is True or isinstance(decision, ToolApproved):
                return pre_tool_use("allow", updated_input=_approved_input(decision, arguments))
            return pre_tool_use("ask", reason="needs a decision")

        return {"PreToolUse": [HookMatcher(matcher=None, hooks=[cast(Any, decide)])]}

    def can_use_tool(self, wait: Callable[[str], Awaitable[McpResponse]]) -> Any:
        """The ``can_use_tool`` callback: the decision on a call of a tool under approval (the policy's, else
        pydantic-ai's answer, which ``wait(tool_use_id)`` awaits) or one the policy denied; any other call Claude
        Code asks about is refused, as the headless CLI refuses what it would ask a person."""
        from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

        async def decide(
            name: str, tool_input: dict[str, Any], context: ToolPermissionContext
        ) -> PermissionResultAllow | PermissionResultDeny:
            call_id, arguments = context.tool_use_id, dict(tool_input)
            if call_id is None or name.startswith("mcp__"):
                return PermissionResultDeny(message=_NOT_ALLOWED_TEXT.format(name=name))
            decision = self.policy_decision(call_id, name, arguments)
            if decision is None and name in self.plan.tools:
                logger.debug("the call %s of %s waits for pydantic-ai's approval", call_id, name)
                decision = _decision_of(await wait(call_id))
            match decision:
                case True | ToolApproved():
                    return PermissionResultAllow(updated_input=_approved_input(decision, arguments))
                case False | ToolDenied():
                    message = decision.message if isinstance(decision, ToolDenied) else ToolDenied().message
                    logger.info("denied a call of %s: %s", name, message)
                    return PermissionResultDeny(message=message)
                case None:
                    return PermissionResultDeny(message=_NOT_ALLOWED_TEXT.format(name=name))

        return decide


def _decision_of(result: McpResponse) -> ToolApproved | ToolDenied:
    """pydantic-ai's answer (made by :func:`approval_result`) as a decision."""
    if result.get("isError", False):
        return ToolDenied("\n".join(block_texts(result["content"])))
    approved = result.get("structuredContent", {}).get("updated_input")
    return ToolApproved(override_args=approved if isinstance(approved, dict) else None)


def _approved_input(decision: ToolApproved | bool, arguments: dict[str, Any]) -> dict[str, Any]:
    if isinstance(decision, ToolApproved) and decision.override_args is not None:
        return decision.override_args
    return arguments
