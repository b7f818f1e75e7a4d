"""The pieces of built-in tool approvals that need no CLI: answers to decisions, the policy gate, the toolset."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent
from pydantic_ai import Agent, DeferredToolRequests, ToolApproved, ToolDenied
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model import BuiltinToolApprovals, ClaudeCodeModel, ClaudeCodeSettingsError
from claudecode_model._history.details import APPROVED_CALL_KEY, CLI_TOOL_NAME_KEY
from claudecode_model._history.repair import repair_history
from claudecode_model._history.replay import transcript_of
from claudecode_model._tools.builtin_approvals import ApprovalPlan, BuiltinGate, approval_result, not_run_result
from claudecode_model.builtin_tools import APPROVED_INPUT_KEY

CALL = ToolCallPart("Bash", {"command": "ls"}, tool_call_id="t1", provider_details={CLI_TOOL_NAME_KEY: "Bash"})


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def test_an_approval_carries_the_input_to_run_and_anything_else_is_a_denial():
    approved = ToolReturnPart("Bash", "ok", tool_call_id="t1", metadata={APPROVED_INPUT_KEY: {"command": "pwd"}})
    denied = ToolReturnPart("Bash", "No.", tool_call_id="t1", outcome="denied")
    retry = ToolReturnPart("Bash", "bad input", tool_call_id="t1", outcome="retried")
    unmarked = ToolReturnPart("Bash", "some value", tool_call_id="t1")

    assert approval_result(CALL, approved).structured_content == {"updated_input": {"command": "pwd"}}
    assert not approval_result(CALL, approved).is_error
    assert (approval_result(CALL, denied).is_error, text(approval_result(CALL, denied))) == (True, "No.")
    assert approval_result(CALL, retry).is_error
    assert "bad input" in text(approval_result(CALL, retry))
    assert approval_result(CALL, unmarked).is_error
    assert "was not approved" in text(approval_result(CALL, unmarked))
    # A call answered in a replayed transcript did not run: an approval says so, a denial stays a denial.
    assert "ended before it ran" in text(not_run_result(CALL, approved))
    assert text(not_run_result(CALL, denied)) == "No."


def decide(gate: BuiltinGate, call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def wait(tool_use_id: str) -> CallToolResult:
        raise AssertionError("the policy decided: nothing waits for pydantic-ai")

    [matcher] = gate.hooks(wait)["PreToolUse"]
    hook = matcher.hooks[0]
    hook_input = {"hook_event_name": "PreToolUse", "tool_name": name, "tool_input": arguments}
    return asyncio.run(hook(hook_input, call_id, {"signal": None}))  # type: ignore[arg-type]


def test_the_policy_is_asked_once_per_call_and_its_decisions_become_permission_decisions():
    asked: list[str] = []

    def policy(call: ToolCallPart) -> ToolApproved | ToolDenied | bool | None:
        asked.append(call.tool_call_id)
        return {"a": True, "b": False, "c": ToolApproved(override_args={"command": "pwd"}), "d": None}[
            call.tool_call_id
        ]

    gate = BuiltinGate(ApprovalPlan((), policy))

    assert not gate.settled("Bash", {"command": "ls"}, "a")  # Bash needs no approval: the translator leaves it
    assert decide(gate, "a", "Bash", {"command": "ls"})["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "ls"},
    }
    assert decide(gate, "b", "Bash", {"command": "ls"})["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert decide(gate, "c", "Bash", {"command": "ls"})["hookSpecificOutput"]["updatedInput"] == {"command": "pwd"}
    assert decide(gate, "d", "Bash", {"command": "ls"}) == {}
    assert decide(gate, "e", "mcp__pydantic_tools__x", {}) == {}  # the agent's own tools are pydantic-ai's
    decide(gate, "a", "Bash", {"command": "ls"})
    assert asked == ["a", "b", "c", "d"]


def test_a_failing_or_wrong_policy_denies_the_call(caplog: pytest.LogCaptureFixture):
    def failing(call: ToolCallPart) -> None:
        raise RuntimeError("policy bug")

    def wrong(call: ToolCallPart) -> Any:
        return "yes"

    with caplog.at_level(logging.ERROR):
        failed = decide(BuiltinGate(ApprovalPlan((), failing)), "a", "Bash", {})["hookSpecificOutput"]
        refused = decide(BuiltinGate(ApprovalPlan((), wrong)), "a", "Bash", {})["hookSpecificOutput"]

    assert failed["permissionDecision"] == "deny"
    assert "policy bug" in failed["permissionDecisionReason"]
    assert refused["permissionDecision"] == "deny"
    assert "policy" in caplog.text


def test_a_call_under_approval_waits_for_pydantic_ais_answer_unless_a_restriction_denies_it():
    results: dict[str, CallToolResult] = {
        "t1": CallToolResult(content=[], structured_content={"updated_input": {"command": "pwd"}}),
        "t2": CallToolResult(content=[TextContent(type="text", text="Nope.")], is_error=True),
    }
    waited: list[str] = []

    async def wait(tool_use_id: str) -> CallToolResult:
        waited.append(tool_use_id)
        return results[tool_use_id]

    gate = BuiltinGate(ApprovalPlan(("Bash",), restrictions={"Bash": {"command": "rm -rf /"}}))
    [matcher] = gate.hooks(wait)["PreToolUse"]

    def run(call_id: str, command: str) -> dict[str, Any]:
        hook_input = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
        return asyncio.run(matcher.hooks[0](hook_input, call_id, {"signal": None}))  # type: ignore[arg-type]

    assert run("t1", "ls")["hookSpecificOutput"]["updatedInput"] == {"command": "pwd"}
    assert run("t2", "ls")["hookSpecificOutput"]["permissionDecisionReason"] == "Nope."
    assert run("t3", "rm -rf /") == {}  # the restriction hook denies it
    assert waited == ["t1", "t2"]
    assert gate.settled("Bash", {"command": "rm -rf /"}, "t3")
    assert not gate.settled("Bash", {"command": "ls"}, "t4")
    assert matcher.timeout is not None
    assert matcher.timeout > 3600


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("Bash", "a list of built-in tool names"),
        (["Bash", ""], "a list of built-in tool names"),
        (["mcp__x__y"], "MCP"),
    ],
)
def test_the_toolset_refuses_what_is_not_a_list_of_built_in_tools(tools: Any, message: str):
    with pytest.raises(ClaudeCodeSettingsError, match=message):
        BuiltinToolApprovals(tools)


def test_the_toolset_offers_tools_that_require_approval_and_name_their_built_in_tool():
    toolset = BuiltinToolApprovals(["Bash", "Edit", "Bash"])

    assert toolset.tool_names == ("Bash", "Edit")
    assert all(tool.requires_approval for tool in toolset.tools.values())


async def test_approvals_refuse_in_loop_execution_before_anything_starts():
    model = ClaudeCodeModel(tool_execution="cli")
    agent = Agent(model, output_type=[str, DeferredToolRequests], toolsets=[BuiltinToolApprovals(["Bash"])])
    try:
        with pytest.raises(ClaudeCodeSettingsError, match="tool_execution='agent'"):
            await agent.run("hello")
    finally:
        await model.aclose()


def approved_history() -> list[Any]:
    call = ToolCallPart("Bash", {"command": "echo hi"}, tool_call_id="t1", provider_details={CLI_TOOL_NAME_KEY: "Bash"})
    approval = ToolReturnPart(
        "Bash", "Approved.", tool_call_id="t1", metadata={APPROVED_INPUT_KEY: {"command": "echo hi"}}
    )
    output = NativeToolReturnPart(
        "Bash",
        "hi",
        tool_call_id="t1",
        provider_name="claude-code",
        provider_details={CLI_TOOL_NAME_KEY: "Bash", APPROVED_CALL_KEY: True},
    )
    return [
        ModelRequest(parts=[UserPromptPart("say hi")]),
        ModelResponse(parts=[call], provider_name="claude-code"),
        ModelRequest(parts=[approval]),
        ModelResponse(parts=[output, TextPart("done")], provider_name="claude-code"),
    ]


def test_the_output_of_an_approved_call_is_kept_by_the_repair_and_replayed_as_its_result():
    history = approved_history()

    assert repair_history(history) == history
    entries = transcript_of(history)

    assert [entry.role for entry in entries] == ["user", "assistant", "user", "assistant"]
    [result] = entries[2].content
    assert (result["tool_use_id"], result["content"], result["is_error"]) == ("t1", "hi", False)
    assert entries[3].content == [{"type": "text", "text": "done"}]


def test_a_third_result_of_an_approved_call_is_still_dropped():
    history = approved_history()
    extra = ToolReturnPart("Bash", "again", tool_call_id="t1")
    broken = [*history, ModelRequest(parts=[extra, UserPromptPart("more")])]

    repaired = repair_history(broken)

    assert repaired[-1].parts == [broken[-1].parts[1]]
