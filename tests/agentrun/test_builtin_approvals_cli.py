"""Approvals of Claude Code's built-in tool calls (Bash, Edit) through pydantic-ai, through the real CLI."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk import CanUseToolShadowedWarning
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import (
    Agent,
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from claudecode_model import (
    BuiltinDecisionError,
    BuiltinToolApprovals,
    BuiltinToolPolicy,
    ClaudeCodeModel,
    ClaudeCodeModelSettings,
    PolicyDecision,
)
from claudecode_model.testing import OfflineBackend
from tests._support.brains import tool_returns
from tests._support.responses import details

pytestmark = pytest.mark.cli

Run = AgentRunResult[str | DeferredToolRequests]


def results_text(messages: list[ModelMessage]) -> str:
    """The text of the tool results the last request carried."""
    return " | ".join(str(part.content).strip() for part in tool_returns(messages[-1]))


@dataclass(frozen=True)
class Case:
    """A built-in tool under approval: what Claude calls, and what the call leaves behind in the working directory."""

    tool: str
    calls: Callable[[Path], list[ToolCallPart]]
    """Claude's calls, one reply each: the last one is the call needing approval."""
    changed_args: Callable[[Path], dict[str, Any]]
    state: Callable[[Path], str]
    before: str
    after: str
    after_changed: str
    settings: ClaudeCodeModelSettings = field(default_factory=lambda: cast("ClaudeCodeModelSettings", {}))

    def brain(self, cwd: Path) -> FunctionModel:
        """Makes the calls, then answers with what the last call returned."""
        calls = self.calls(cwd)

        def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            replies = sum(isinstance(message, ModelResponse) for message in messages)
            if replies < len(calls):
                return ModelResponse(parts=[calls[replies]])
            return ModelResponse(parts=[TextPart(f"tool said: {results_text(messages)}")])

        return FunctionModel(brain)


def log_text(cwd: Path) -> str:
    log = cwd / "log.txt"
    return log.read_text() if log.exists() else ""


def sky_text(cwd: Path) -> str:
    return (cwd / "sky.txt").read_text()


def edit(cwd: Path, new: str) -> dict[str, Any]:
    return {"file_path": str(cwd / "sky.txt"), "old_string": "blue", "new_string": new}


BASH = Case(
    tool="Bash",
    calls=lambda cwd: [ToolCallPart("Bash", {"command": "echo approved >> log.txt && cat log.txt"})],
    changed_args=lambda cwd: {"command": "echo changed >> log.txt && cat log.txt"},
    state=log_text,
    before="",
    after="approved\n",
    after_changed="changed\n",
)
EDIT = Case(
    tool="Edit",
    # Claude Code edits only a file read in the session: Read runs without asking, Edit waits.
    calls=lambda cwd: [
        ToolCallPart("Read", {"file_path": str(cwd / "sky.txt")}),
        ToolCallPart("Edit", edit(cwd, "green")),
    ],
    changed_args=lambda cwd: edit(cwd, "red"),
    state=sky_text,
    before="the sky is blue\n",
    after="the sky is green\n",
    after_changed="the sky is red\n",
    settings={"claude_code_builtin_tools": ["Read"]},
)
CASES = [pytest.param(BASH, id="Bash"), pytest.param(EDIT, id="Edit")]


def approval_agent(model: ClaudeCodeModel, case: Case, cwd: Path) -> Agent[None, str | DeferredToolRequests]:
    if not (cwd / "sky.txt").exists():
        (cwd / "sky.txt").write_text("the sky is blue\n")
    settings: ClaudeCodeModelSettings = {**case.settings, "claude_code_cwd": str(cwd)}
    return Agent(
        model,
        output_type=[str, DeferredToolRequests],
        toolsets=[BuiltinToolApprovals([case.tool])],
        model_settings=settings,
    )


async def ask(
    model: ClaudeCodeModel, backend: OfflineBackend, case: Case, cwd: Path
) -> tuple[Agent[None, str | DeferredToolRequests], Run, ToolCallPart]:
    """Run until Claude's call waits for approval: the agent, the run and the call."""
    agent = approval_agent(model, case, cwd)
    backend.set_brain(case.brain(cwd))
    first = await agent.run("do it")
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    assert request.tool_name == case.tool
    assert case.calls(cwd)[-1].args_as_dict().items() <= request.args_as_dict().items()  # Edit adds replace_all
    assert case.state(cwd) == case.before  # nothing ran yet
    return agent, first, request


def answer(first: Run, request: ToolCallPart, decision: bool | ToolApproved | ToolDenied) -> dict[str, Any]:
    results = DeferredToolResults(approvals={request.tool_call_id: decision})
    return {"message_history": first.all_messages(), "deferred_tool_results": results}


@pytest.mark.parametrize("case", CASES)
async def test_an_approved_call_runs_in_claude_code_and_its_output_reaches_claude(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path, case: Case
):
    agent, first, request = await ask(model, claude_backend, case, tmp_path)
    reply = first.all_messages()[-1]
    assert isinstance(reply, ModelResponse)
    assert reply.finish_reason == "tool_call"
    asked = len(claude_backend.requests)
    # The tool was enabled in Claude Code, and not offered a second time as an MCP tool.
    assert case.tool in claude_backend.requests[-1].tool_names
    assert not any(name.startswith("mcp__") for name in claude_backend.requests[-1].tool_names)

    second = await agent.run(**answer(first, request, True))

    assert case.state(tmp_path) == case.after
    assert len(claude_backend.requests) == asked + 1
    result = claude_backend.requests[-1].tool_results()[-1]
    assert result.tool_use_id == request.tool_call_id
    assert not result.is_error
    assert second.output.startswith("tool said: ")
    # The same CLI turn went on; the history shows the approval, then what Claude Code made of the call.
    assert details(second.response)["session_id"] == details(reply)["session_id"]
    new = second.new_messages()
    [approval] = tool_returns(*new)
    assert approval.tool_call_id == request.tool_call_id
    assert approval.outcome == "success"
    [output] = [part for message in new for part in message.parts if isinstance(part, NativeToolReturnPart)]
    assert output.tool_call_id == request.tool_call_id
    assert output.outcome == "success"
    assert str(output.content) == result.text
    # The history with the approval and its output is exactly what the live session holds: a follow-up continues it.
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")])))
    third = await agent.run("and now?", message_history=second.all_messages())
    assert details(third.response)["session_source"] == "live"


@pytest.mark.parametrize("case", CASES)
async def test_a_denied_call_does_not_run_and_claude_gets_the_denial(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path, case: Case
):
    agent, first, request = await ask(model, claude_backend, case, tmp_path)

    second = await agent.run(**answer(first, request, ToolDenied("Not in this folder.")))

    assert case.state(tmp_path) == case.before
    result = claude_backend.requests[-1].tool_results()[-1]
    assert result.tool_use_id == request.tool_call_id
    assert result.is_error
    assert "Not in this folder." in result.text
    assert "Not in this folder." in second.output
    new = second.new_messages()
    [denial] = tool_returns(*new)
    assert denial.outcome == "denied"


@pytest.mark.parametrize("case", CASES)
async def test_an_approval_with_changed_arguments_runs_the_changed_call(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path, case: Case
):
    agent, first, request = await ask(model, claude_backend, case, tmp_path)

    changed = ToolApproved(override_args=case.changed_args(tmp_path))
    await agent.run(**answer(first, request, changed))

    assert case.state(tmp_path) == case.after_changed
    assert not claude_backend.requests[-1].tool_results()[-1].is_error


async def run_on_a_new_model(backend: OfflineBackend, case: Case, cwd: Path, *args: Any, **kwargs: Any) -> Run:
    """One run on a model of its own (as in a process of its own), closed afterwards."""
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        return await approval_agent(model, case, cwd).run(*args, **kwargs)
    finally:
        await model.aclose()


@pytest.mark.parametrize("case", CASES)
async def test_an_approval_continues_on_another_model_instance_after_a_restart(
    claude_backend: OfflineBackend, tmp_path: Path, case: Case
):
    claude_backend.set_brain(case.brain(tmp_path))
    first = await run_on_a_new_model(claude_backend, case, tmp_path, "do it")
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    assert case.state(tmp_path) == case.before
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(first.all_messages()))
    asked = len(claude_backend.requests)

    second = await run_on_a_new_model(
        claude_backend, case, tmp_path, **answer(first, request, True) | {"message_history": history}
    )

    assert case.state(tmp_path) == case.after
    assert len(claude_backend.requests) == asked + 1
    resumed = claude_backend.requests[-1]
    result = resumed.tool_results()[-1]
    assert result.tool_use_id == request.tool_call_id
    assert not result.is_error
    assert "interrupted" not in str(resumed.raw["messages"])
    assert second.output == f"tool said: {result.text.strip()}"


async def test_a_later_replay_shows_claude_the_output_of_the_approved_call(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    agent, first, request = await ask(model, claude_backend, BASH, tmp_path)
    second = await agent.run(**answer(first, request, True))
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")])))

    # Another machine (its own Claude Code config, without the session): the history is replayed into a new session.
    (tmp_path / "elsewhere").mkdir()
    elsewhere = ClaudeCodeModel(env=claude_backend.cli_env(config_dir=tmp_path / "elsewhere"), spare_sessions=0)
    try:
        third = await approval_agent(elsewhere, BASH, tmp_path).run("and now?", message_history=second.all_messages())
    finally:
        await elsewhere.aclose()

    assert details(third.response)["session_source"] == "replay"

    replayed = claude_backend.requests[-1]
    assert [(r.tool_use_id, r.text.strip(), r.is_error) for r in replayed.tool_results()] == [
        (request.tool_call_id, "approved", False)
    ]


def policy_of(seen: list[ToolCallPart], decision: Callable[[ToolCallPart], PolicyDecision]) -> BuiltinToolPolicy:
    def policy(call: ToolCallPart) -> PolicyDecision:
        seen.append(call)
        return decision(call)

    return policy


@pytest.mark.parametrize("case", CASES)
async def test_a_policy_decides_in_code_without_ending_the_run(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path, case: Case
):
    seen: list[ToolCallPart] = []
    agent = approval_agent(model, case, tmp_path)
    claude_backend.set_brain(case.brain(tmp_path))
    denied = policy_of(seen, lambda call: ToolDenied("No, says the policy.") if call.tool_name == case.tool else None)

    refused = await agent.run(
        "do it", model_settings=ClaudeCodeModelSettings({"claude_code_builtin_tool_policy": denied})
    )

    assert case.state(tmp_path) == case.before
    assert isinstance(refused.output, str)
    assert refused.output.startswith("tool said: ")
    assert "No, says the policy." in refused.output
    result = claude_backend.requests[-1].tool_results()[-1]
    assert result.is_error
    # Decided in code: reported as a call Claude Code made, not one for pydantic-ai to approve.
    parts = [part for message in refused.all_messages() for part in message.parts]
    assert any(isinstance(part, NativeToolCallPart) and part.tool_name == case.tool for part in parts)
    assert not any(type(part) is ToolCallPart for part in parts)
    assert [call.tool_name for call in seen] == [call.tool_name for call in case.calls(tmp_path)]
    assert case.calls(tmp_path)[-1].args_as_dict().items() <= seen[-1].args_as_dict().items()

    seen.clear()
    changed = policy_of(
        seen,
        lambda call: ToolApproved(override_args=case.changed_args(tmp_path)) if call.tool_name == case.tool else None,
    )
    approved = await agent.run(
        "do it", model_settings=ClaudeCodeModelSettings({"claude_code_builtin_tool_policy": changed})
    )

    assert case.state(tmp_path) == case.after_changed
    assert isinstance(approved.output, str)
    assert approved.output.startswith("tool said: ")
    assert not claude_backend.requests[-1].tool_results()[-1].is_error


async def test_a_policy_without_a_decision_leaves_the_call_to_pydantic_ais_approval(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    seen: list[ToolCallPart] = []
    agent = approval_agent(model, BASH, tmp_path)
    claude_backend.set_brain(BASH.brain(tmp_path))

    first = await agent.run(
        "do it",
        model_settings=ClaudeCodeModelSettings({"claude_code_builtin_tool_policy": policy_of(seen, lambda call: None)}),
    )

    assert isinstance(first.output, DeferredToolRequests)
    assert len(seen) == 1
    assert log_text(tmp_path) == ""


async def test_the_approval_shows_as_a_tool_call_in_pydantic_ais_events(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    agent, first, request = await ask(model, claude_backend, BASH, tmp_path)

    async with agent.run_stream_events(**answer(first, request, True)) as stream:
        events = [event async for event in stream]

    [called] = [event for event in events if isinstance(event, FunctionToolCallEvent)]
    [returned] = [event for event in events if isinstance(event, FunctionToolResultEvent)]
    assert (called.part.tool_name, called.part.tool_call_id) == ("Bash", request.tool_call_id)
    assert returned.tool_call_id == request.tool_call_id
    assert log_text(tmp_path) == "approved\n"


def two_bash_calls(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(message, ModelResponse) for message in messages):
        calls = [ToolCallPart("Bash", {"command": f"echo {word} >> log.txt"}) for word in ("one", "two")]
        return ModelResponse(parts=calls)
    return ModelResponse(parts=[TextPart(f"tool said: {results_text(messages)}")])


async def test_several_calls_of_one_reply_are_approved_or_denied_each(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(FunctionModel(two_bash_calls))
    agent = approval_agent(model, BASH, tmp_path)
    first = await agent.run("log two words")
    assert isinstance(first.output, DeferredToolRequests)
    one, two = first.output.approvals
    decisions = DeferredToolResults(approvals={one.tool_call_id: True, two.tool_call_id: ToolDenied("Only one.")})

    await agent.run(message_history=first.all_messages(), deferred_tool_results=decisions)

    assert log_text(tmp_path) == "one\n"
    results = {r.tool_use_id: r for r in claude_backend.requests[-1].tool_results()}
    assert not results[one.tool_call_id].is_error
    assert results[two.tool_call_id].is_error
    assert "Only one." in results[two.tool_call_id].text


async def test_after_a_restart_two_approved_calls_of_a_reply_are_refused_before_anything_runs(
    claude_backend: OfflineBackend, tmp_path: Path
):
    claude_backend.set_brain(FunctionModel(two_bash_calls))
    first = await run_on_a_new_model(claude_backend, BASH, tmp_path, "log two words")
    assert isinstance(first.output, DeferredToolRequests)
    one, two = first.output.approvals
    decisions = DeferredToolResults(approvals={one.tool_call_id: True, two.tool_call_id: True})
    asked = len(claude_backend.requests)

    with pytest.raises(BuiltinDecisionError, match="2 approved calls"):
        await run_on_a_new_model(
            claude_backend, BASH, tmp_path, message_history=first.all_messages(), deferred_tool_results=decisions
        )

    assert log_text(tmp_path) == ""
    assert len(claude_backend.requests) == asked


async def test_a_policy_also_decides_when_claude_code_runs_the_agents_tools(
    claude_backend: OfflineBackend, tmp_path: Path
):
    (tmp_path / "keep.txt").write_text("keep")
    deleting = replace(BASH, calls=lambda cwd: [ToolCallPart("Bash", {"command": "rm keep.txt"})])
    claude_backend.set_brain(deleting.brain(tmp_path))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_execution="cli")
    settings: ClaudeCodeModelSettings = {
        "claude_code_builtin_tools": ["Bash"],
        "claude_code_cwd": str(tmp_path),
        "claude_code_builtin_tool_policy": lambda call: ToolDenied("No deleting."),
    }
    agent = Agent(model, model_settings=settings)

    @agent.tool_plain
    def unused() -> str:
        return "not called"

    try:
        result = await agent.run("delete it")
    finally:
        await model.aclose()

    assert (tmp_path / "keep.txt").exists()
    assert "No deleting." in result.output


async def test_the_approval_and_the_call_show_in_the_trace(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
    claude_backend.set_brain(BASH.brain(tmp_path))
    agent = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        toolsets=[BuiltinToolApprovals(["Bash"])],
        model_settings=ClaudeCodeModelSettings({"claude_code_cwd": str(tmp_path)}),
        capabilities=[instrumentation],
    )
    first = await agent.run("do it")
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals

    await agent.run(**answer(first, request, True))

    spans = exporter.get_finished_spans()
    assert [span.name for span in spans if span.name.startswith("execute_tool")] == ["execute_tool Bash"]
    chats = [json.dumps(dict(span.attributes or {}), default=str) for span in spans if span.name.startswith("chat")]
    assert request.tool_call_id in chats[0]  # the call, in the response that asked for it
    assert "approved" in chats[-1]  # Claude Code's output of the call, in the next one
    exporter.shutdown()


async def test_the_sdk_advice_on_the_approval_callback_does_not_reach_the_user(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    # Read is allowed beside the approval callback: the SDK would warn that Read never reaches the callback.
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        await ask(model, claude_backend, EDIT, tmp_path)

    assert [str(warning.message) for warning in shown if warning.category is CanUseToolShadowedWarning] == []
