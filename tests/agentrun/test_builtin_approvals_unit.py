"""The pieces of built-in tool approvals that need no CLI: answers to decisions, the policy gate, the toolset."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
from pydantic_ai import Agent, DeferredToolRequests, ToolApproved, ToolDenied
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model import BuiltinDecisionError, BuiltinToolApprovals, ClaudeCodeModel, ClaudeCodeSettingsError
from claudecode_model._history.details import APPROVED_CALL_KEY, CLI_TOOL_NAME_KEY
from claudecode_model._history.repair import repair_history
from claudecode_model._history.replay import transcript_of
from claudecode_model._tools.agent_executed import PendingCalls, resumed_calls
from claudecode_model._tools.builtin_approvals import (
    ApprovalPlan,
    BuiltinGate,
    approval_result,
    check_permission_mode_for_taken_up_call,
    cli_permission_mode,
)
from claudecode_model._tools.core import McpResponse, text_result
from claudecode_model.builtin_tools import APPROVED_INPUT_KEY

CALL = ToolCallPart("Bash", {"command": "ls"}, tool_call_id="t1", provider_details={CLI_TOOL_NAME_KEY: "Bash"})


def text(result: McpResponse) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def is_error(result: McpResponse) -> bool:
    return result.get("isError", False)


def test_an_approval_carries_the_input_to_run_and_anything_else_is_a_denial():
    approved = ToolReturnPart("Bash", "ok", tool_call_id="t1", metadata={APPROVED_INPUT_KEY: {"command": "pwd"}})
    denied = ToolReturnPart("Bash", "No.", tool_call_id="t1", outcome="denied")
    retry = ToolReturnPart("Bash", "bad input", tool_call_id="t1", outcome="retried")
    unmarked = ToolReturnPart("Bash", "some value", tool_call_id="t1")

    assert approval_result(CALL, approved).get("structuredContent") == {"updated_input": {"command": "pwd"}}
    assert not is_error(approval_result(CALL, approved))
    assert (is_error(approval_result(CALL, denied)), text(approval_result(CALL, denied))) == (True, "No.")
    assert is_error(approval_result(CALL, retry))
    assert "bad input" in text(approval_result(CALL, retry))
    assert is_error(approval_result(CALL, unmarked))
    assert "was not approved" in text(approval_result(CALL, unmarked))


def hook_output(gate: BuiltinGate, call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    [matcher] = gate.hooks()["PreToolUse"]
    hook_input = {"hook_event_name": "PreToolUse", "tool_name": name, "tool_input": arguments}
    return asyncio.run(matcher.hooks[0](hook_input, call_id, {"signal": None}))


def permission(
    gate: BuiltinGate, call_id: str, name: str, arguments: dict[str, Any], answers: dict[str, McpResponse] | None = None
) -> PermissionResultAllow | PermissionResultDeny:
    waited: list[str] = []

    async def wait(tool_use_id: str) -> McpResponse:
        waited.append(tool_use_id)
        if answers is None:
            raise AssertionError("the policy decided: nothing waits for pydantic-ai")
        return answers[tool_use_id]

    decide = gate.can_use_tool(wait)
    result: PermissionResultAllow | PermissionResultDeny = asyncio.run(
        decide(name, arguments, ToolPermissionContext(tool_use_id=call_id))
    )
    assert waited == ([call_id] if answers is not None else [])
    return result


ASK = {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "needs a decision"}


def test_the_policy_is_asked_once_per_call_and_its_decisions_become_permission_decisions():
    asked: list[str] = []

    def policy(call: ToolCallPart) -> ToolApproved | ToolDenied | bool | None:
        asked.append(call.tool_call_id)
        decisions: dict[str, ToolApproved | ToolDenied | bool | None] = {
            "a": True,
            "b": False,
            "c": ToolApproved(override_args={"command": "pwd"}),
            "d": None,
        }
        return decisions.get(call.tool_call_id, ToolDenied("Not that."))

    gate = BuiltinGate(ApprovalPlan((), policy))

    assert not gate.settled("Bash", {"command": "ls"}, "a")  # Bash needs no approval: the translator leaves it
    assert hook_output(gate, "a", "Bash", {"command": "ls"})["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "ls"},
    }
    # A denial makes Claude Code ask, and the answer carries the message as written.
    assert hook_output(gate, "b", "Bash", {"command": "ls"})["hookSpecificOutput"] == ASK
    assert permission(gate, "b", "Bash", {"command": "ls"}) == PermissionResultDeny(message=ToolDenied().message)
    assert hook_output(gate, "e", "Bash", {"command": "ls"})["hookSpecificOutput"] == ASK
    assert permission(gate, "e", "Bash", {"command": "ls"}) == PermissionResultDeny(message="Not that.")
    assert hook_output(gate, "c", "Bash", {"command": "ls"})["hookSpecificOutput"]["updatedInput"] == {"command": "pwd"}
    assert hook_output(gate, "d", "Bash", {"command": "ls"}) == {}
    assert hook_output(gate, "f", "mcp__pydantic_tools__x", {}) == {}  # the agent's own tools are pydantic-ai's
    hook_output(gate, "a", "Bash", {"command": "ls"})
    assert asked == ["a", "b", "e", "c", "d"]
    # What Claude Code asks about beyond the gate's calls is refused, as the headless CLI refuses what it would ask.
    refused = permission(gate, "d", "Write", {"file_path": "x"})
    assert isinstance(refused, PermissionResultDeny)
    assert "not allowed" in refused.message


def test_a_failing_or_wrong_policy_denies_the_call(caplog: pytest.LogCaptureFixture):
    def failing(call: ToolCallPart) -> None:
        raise RuntimeError("policy bug")

    def wrong(call: ToolCallPart) -> Any:
        return "yes"

    with caplog.at_level(logging.ERROR):
        failed = permission(BuiltinGate(ApprovalPlan((), failing)), "a", "Bash", {})
        refused = permission(BuiltinGate(ApprovalPlan((), wrong)), "a", "Bash", {})

    assert isinstance(failed, PermissionResultDeny)
    assert "policy bug" in failed.message
    assert isinstance(refused, PermissionResultDeny)
    assert "policy" in caplog.text


def test_a_call_under_approval_waits_for_pydantic_ais_answer_unless_a_restriction_denies_it():
    answers: dict[str, McpResponse] = {
        "t1": {"content": [], "structuredContent": {"updated_input": {"command": "pwd"}}},
        "t2": text_result("Nope.", is_error=True),
    }
    gate = BuiltinGate(ApprovalPlan(("Bash",), restrictions={"Bash": {"command": "rm -rf /"}}))

    assert hook_output(gate, "t1", "Bash", {"command": "ls"})["hookSpecificOutput"] == ASK
    assert permission(gate, "t1", "Bash", {"command": "ls"}, answers) == PermissionResultAllow(
        updated_input={"command": "pwd"}
    )
    assert permission(gate, "t2", "Bash", {"command": "ls"}, answers) == PermissionResultDeny(message="Nope.")
    assert hook_output(gate, "t3", "Bash", {"command": "rm -rf /"}) == {}  # the restriction hook denies it
    assert gate.settled("Bash", {"command": "rm -rf /"}, "t3")
    assert not gate.settled("Bash", {"command": "ls"}, "t4")


def test_the_cli_asks_about_tools_under_approval_in_a_mode_that_asks():
    assert cli_permission_mode("dontAsk", ApprovalPlan(("Bash",))) == "default"
    assert cli_permission_mode("dontAsk", ApprovalPlan()) == "dontAsk"
    assert cli_permission_mode("acceptEdits", ApprovalPlan(("Bash",))) == "acceptEdits"
    check_permission_mode_for_taken_up_call("dontAsk")
    check_permission_mode_for_taken_up_call("default")
    with pytest.raises(BuiltinDecisionError, match="acceptEdits"):
        check_permission_mode_for_taken_up_call("acceptEdits")


def builtin_call(call_id: str, command: str) -> ToolCallPart:
    return ToolCallPart(
        "Bash", {"command": command}, tool_call_id=call_id, provider_details={CLI_TOOL_NAME_KEY: "Bash"}
    )


def approved(call_id: str, **override: Any) -> ToolReturnPart:
    return ToolReturnPart("Bash", "ok", tool_call_id=call_id, metadata={APPROVED_INPUT_KEY: override or {"c": 1}})


def denied(call_id: str, message: str) -> ToolReturnPart:
    return ToolReturnPart("Bash", message, tool_call_id=call_id, outcome="denied")


def taken_up(*answers: Any) -> Any:
    calls = [builtin_call("t1", "one"), builtin_call("t2", "two"), builtin_call("t3", "three")]
    response = ModelResponse(parts=calls, provider_name="claude-code")
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("go")]),
        response,
        ModelRequest(parts=list(answers)),
    ]
    return resumed_calls(messages, PendingCalls(response, calls, list(answers)))


def test_a_new_session_takes_up_the_approved_call_and_gives_claude_each_denial_as_written():
    resumed = taken_up(denied("t1", "Not one."), approved("t2"), denied("t3", "Not three."))

    assert resumed.deferred_call is not None
    assert resumed.deferred_call["id"] == "t2"  # the approved call is the one Claude Code runs on resume
    results = {
        block["tool_use_id"]: (block["content"], block["is_error"])
        for entry in resumed.entries
        if entry.role == "user"
        for block in entry.content
        if block.get("type") == "tool_result"
    }
    assert results == {
        "t1": ([{"type": "text", "text": "Not one."}], True),
        "t3": ([{"type": "text", "text": "Not three."}], True),
    }
    assert resumed.entries[-1].role == "assistant"
    assert resumed.entries[-1].content[-1] is resumed.deferred_call


def test_two_approved_calls_or_an_approval_with_a_prompt_are_refused_before_anything_runs():
    with pytest.raises(BuiltinDecisionError, match="2 approved calls"):
        taken_up(approved("t1"), approved("t2"), denied("t3", "No."))
    with pytest.raises(BuiltinDecisionError, match="new prompt"):
        taken_up(approved("t1"), denied("t2", "No."), denied("t3", "No."), UserPromptPart("and then?"))


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
