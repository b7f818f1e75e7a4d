"""Approvals of Claude Code's built-in tool calls (Bash, Edit) through pydantic-ai, through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import BuiltinToolApprovals, ClaudeCodeModel
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

Run = AgentRunResult[str | DeferredToolRequests]


def results_text(messages: list[ModelMessage]) -> str:
    """The text of the tool results the last request carried."""
    last = messages[-1]
    return " | ".join(str(part.content).strip() for part in last.parts if isinstance(part, ToolReturnPart))


def bash_brain(command: str) -> FunctionModel:
    """Calls Bash with ``command`` once, then answers with what the call returned."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(message, ModelResponse) for message in messages):
            return ModelResponse(parts=[TextPart("Running it."), ToolCallPart("Bash", {"command": command})])
        return ModelResponse(parts=[TextPart(f"bash said: {results_text(messages)}")])

    return FunctionModel(brain)


def approval_agent(model: ClaudeCodeModel, tools: list[str], cwd: Path) -> Agent[None, str | DeferredToolRequests]:
    settings: ClaudeCodeModelSettings = {"claude_code_cwd": str(cwd)}
    return Agent(
        model, output_type=[str, DeferredToolRequests], toolsets=[BuiltinToolApprovals(tools)], model_settings=settings
    )


async def ask(agent: Agent[None, str | DeferredToolRequests], prompt: str) -> tuple[Run, ToolCallPart]:
    first = await agent.run(prompt)
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    return first, request


async def test_an_approved_bash_call_runs_in_claude_code_and_its_output_reaches_claude(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(bash_brain("echo approved > out.txt && cat out.txt"))
    agent = approval_agent(model, ["Bash"], tmp_path)

    first, request = await ask(agent, "write a file")

    # The run ended with the call for the user to inspect, and nothing ran yet.
    assert (request.tool_name, request.args_as_dict()) == (
        "Bash",
        {"command": "echo approved > out.txt && cat out.txt"},
    )
    assert not (tmp_path / "out.txt").exists()
    reply = first.all_messages()[-1]
    assert isinstance(reply, ModelResponse)
    assert reply.finish_reason == "tool_call"
    assert len(claude_backend.requests) == 1
    # Bash was enabled in Claude Code, and not offered a second time as an MCP tool.
    assert "Bash" in claude_backend.requests[0].tool_names
    assert not any(name.startswith("mcp__") for name in claude_backend.requests[0].tool_names)

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
    )

    assert (tmp_path / "out.txt").read_text() == "approved\n"
    [result] = claude_backend.requests[1].tool_results()
    assert (result.tool_use_id, result.text.strip(), result.is_error) == (request.tool_call_id, "approved", False)
    assert second.output == "bash said: approved"
    # The same CLI turn went on, and the history shows the approval and then what Claude Code made of the call.
    assert second.response.provider_details["session_id"] == reply.provider_details["session_id"]
    new = second.new_messages()
    approval = next(part for message in new for part in message.parts if isinstance(part, ToolReturnPart))
    assert approval.tool_call_id == request.tool_call_id
    assert approval.outcome == "success"
    [output] = [part for message in new for part in message.parts if isinstance(part, NativeToolReturnPart)]
    assert (output.tool_call_id, str(output.content).strip(), output.outcome) == (
        request.tool_call_id,
        "approved",
        "success",
    )


async def test_a_denied_bash_call_does_not_run_and_claude_gets_the_denial(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(bash_brain("touch denied.txt"))
    agent = approval_agent(model, ["Bash"], tmp_path)
    first, request = await ask(agent, "touch a file")

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: ToolDenied("Not in this folder.")}),
    )

    assert not (tmp_path / "denied.txt").exists()
    [result] = claude_backend.requests[1].tool_results()
    assert result.tool_use_id == request.tool_call_id
    assert result.is_error
    assert "Not in this folder." in result.text
    assert "Not in this folder." in second.output


async def test_an_approval_with_changed_arguments_runs_the_changed_command(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(bash_brain("echo original"))
    agent = approval_agent(model, ["Bash"], tmp_path)
    first, request = await ask(agent, "say something")

    changed = ToolApproved(override_args={"command": "echo changed"})
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: changed}),
    )

    [result] = claude_backend.requests[1].tool_results()
    assert (result.text.strip(), result.is_error) == ("changed", False)
    assert second.output == "bash said: changed"


def edit_brain(path: Path) -> FunctionModel:
    """Reads ``path`` (allowed without asking), then edits it, then answers with what the edit returned."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        replies = sum(isinstance(message, ModelResponse) for message in messages)
        if replies == 0:
            return ModelResponse(parts=[ToolCallPart("Read", {"file_path": str(path)})])
        if replies == 1:
            edit = {"file_path": str(path), "old_string": "blue", "new_string": "green"}
            return ModelResponse(parts=[ToolCallPart("Edit", edit)])
        return ModelResponse(parts=[TextPart(f"edit said: {results_text(messages)}")])

    return FunctionModel(brain)


async def run_on_a_new_model(backend: OfflineBackend, tools: list[str], cwd: Path, *args: Any, **kwargs: Any) -> Run:
    """One run on a model of its own (as in a process of its own), closed afterwards."""
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        return await approval_agent(model, tools, cwd).run(*args, **kwargs)
    finally:
        await model.aclose()


async def test_an_edit_approved_on_another_model_instance_runs_after_the_restart(
    claude_backend: OfflineBackend, tmp_path: Path
):
    target = tmp_path / "sky.txt"
    target.write_text("the sky is blue\n")
    claude_backend.set_brain(edit_brain(target))
    settings: ClaudeCodeModelSettings = {"claude_code_builtin_tools": ["Read"]}

    first = await run_on_a_new_model(claude_backend, ["Edit"], tmp_path, "edit it", model_settings=settings)
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    assert request.tool_name == "Edit"
    assert request.args_as_dict()["new_string"] == "green"
    assert target.read_text() == "the sky is blue\n"
    # The Read call ran inside Claude Code without asking.
    assert any(
        isinstance(part, NativeToolCallPart) and part.tool_name == "Read"
        for m in first.all_messages()
        for part in m.parts
    )
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(first.all_messages()))

    second = await run_on_a_new_model(
        claude_backend,
        ["Edit"],
        tmp_path,
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
        model_settings=settings,
    )

    assert target.read_text() == "the sky is green\n"
    assert second.output.startswith("edit said: ")
    results = claude_backend.requests[-1].tool_results()
    assert results[-1].tool_use_id == request.tool_call_id
    assert not results[-1].is_error
    assert "interrupted" not in str(claude_backend.requests[-1].raw["messages"])


async def test_a_policy_decides_bash_calls_in_code_without_ending_the_run(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    seen: list[ToolCallPart] = []

    def policy(call: ToolCallPart) -> ToolApproved | ToolDenied | None:
        seen.append(call)
        command = str(call.args_as_dict().get("command", ""))
        if "rm " in command:
            return ToolDenied("No deleting.")
        return ToolApproved(override_args={"command": command.replace("hello", "policy")})

    (tmp_path / "keep.txt").write_text("keep")
    claude_backend.set_brain(bash_brain("rm keep.txt"))
    agent = approval_agent(model, ["Bash"], tmp_path)
    settings: ClaudeCodeModelSettings = {"claude_code_builtin_tool_policy": policy}

    denied = await agent.run("delete it", model_settings=settings)

    assert (tmp_path / "keep.txt").exists()
    assert isinstance(denied.output, str)
    assert "No deleting." in denied.output
    [result] = claude_backend.requests[-1].tool_results()
    assert result.is_error
    assert "No deleting." in result.text
    # Decided in code: reported as a call Claude Code made, not one for pydantic-ai to approve.
    parts = [part for message in denied.all_messages() for part in message.parts]
    assert any(isinstance(part, NativeToolCallPart) and part.tool_name == "Bash" for part in parts)
    assert not any(isinstance(part, ToolCallPart) and part.tool_name == "Bash" for part in parts)
    assert len(seen) == 1

    claude_backend.set_brain(bash_brain("echo hello"))
    approved = await agent.run("greet", model_settings=settings)

    assert approved.output == "bash said: policy"
    assert len(seen) == 2
