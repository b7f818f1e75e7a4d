"""A person's decision on a built-in call holds on every path, through the real CLI (issue 35).

Claude calls Bash (or Edit) in a scratch directory under ``BuiltinToolApprovals``; the person approves, denies or
approves with other arguments, and the run goes on:

- ``waiting``: on the same model while its Claude Code turn waits;
- ``expired``: on the same model after the waiting turn was closed (``session_idle_timeout``);
- ``instance``: on another model instance (another worker in the same program);
- ``process``: in another Python process (a restart), from the history saved as JSON.

After each, the directory shows that only what was approved happened, exactly once, and Claude got each refusal as
the call's error result in the person's words.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.polling import wait_for
from tests._support.processes import cli_children
from tests._support.subprocesses import run_python
from tests.agentrun.test_builtin_approvals_cli import BASH, EDIT, Case, approval_agent

pytestmark = pytest.mark.cli

PATHS = ["waiting", "expired", "instance", "process"]
DENIAL = "No: not in this folder, said the person."
Decision = bool | ToolApproved | ToolDenied

_CONTINUE = textwrap.dedent(
    """
    import json, sys
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from claudecode_model import BuiltinToolApprovals, ClaudeCodeModel

    spec = json.loads(sys.stdin.read())
    decisions = {
        call_id: ToolDenied(d["denied"]) if "denied" in d else ToolApproved(override_args=d.get("override"))
        for call_id, d in spec["decisions"].items()
    }
    model = ClaudeCodeModel(env=spec["env"], spare_sessions=0)
    agent = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        toolsets=[BuiltinToolApprovals([spec["tool"]])],
        model_settings={**spec["settings"], "claude_code_cwd": spec["cwd"]},
    )
    history = ModelMessagesTypeAdapter.validate_json(spec["history"])
    result = agent.run_sync(message_history=history, deferred_tool_results=DeferredToolResults(approvals=decisions))
    model.close()
    source = result.response.provider_details["session_source"]
    print(json.dumps({"output": str(result.output), "session_source": source}))
    """
)


@dataclass
class Asked:
    """The run that stopped at the approval, and the model it ran on."""

    model: ClaudeCodeModel
    history: list[ModelMessage]
    calls: list[ToolCallPart]


async def ask(backend: OfflineBackend, case: Case, cwd: Path, brain: FunctionModel, **model_kwargs: Any) -> Asked:
    backend.set_brain(brain)
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, **model_kwargs)
    first = await approval_agent(model, case, cwd).run("do it")
    assert isinstance(first.output, DeferredToolRequests)
    assert case.state(cwd) == case.before  # nothing ran yet
    return Asked(model, first.all_messages(), list(first.output.approvals))


def wire_decision(decision: Decision) -> dict[str, Any]:
    match decision:
        case ToolDenied(message=message):
            return {"denied": message}
        case ToolApproved(override_args=override):
            return {"override": override}
        case True:
            return {}
        case False:
            return {"denied": ToolDenied().message}


@dataclass
class Continued:
    output: str
    session_source: str
    """How the turn got its Claude Code session (``provider_details["session_source"]``)."""


async def go_on(
    path: str, asked: Asked, backend: OfflineBackend, case: Case, cwd: Path, decisions: dict[str, Decision]
) -> Continued:
    """Continue the run with the person's decisions on ``path``."""
    results = DeferredToolResults(approvals=dict(decisions))
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(asked.history))
    match path:
        case "waiting":
            second = await approval_agent(asked.model, case, cwd).run(
                message_history=asked.history, deferred_tool_results=results
            )
            await asked.model.aclose()
            return continued(second)
        case "expired":
            # The turn that waited is closed (and its CLI gone) once session_idle_timeout passes.
            assert await wait_for(lambda: not cli_children(), within=30)
            second = await approval_agent(asked.model, case, cwd).run(
                message_history=history, deferred_tool_results=results
            )
            await asked.model.aclose()
            return continued(second)
        case "instance":
            await asked.model.aclose()
            other = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
            try:
                second = await approval_agent(other, case, cwd).run(
                    message_history=history, deferred_tool_results=results
                )
            finally:
                await other.aclose()
            return continued(second)
        case "process":
            await asked.model.aclose()
            spec = {
                "env": backend.cli_env(),
                "tool": case.tool,
                "settings": dict(case.settings),
                "cwd": str(cwd),
                "history": ModelMessagesTypeAdapter.dump_json(asked.history).decode(),
                "decisions": {call_id: wire_decision(decision) for call_id, decision in decisions.items()},
            }
            done = run_python("-c", _CONTINUE, timeout=120, stdin=json.dumps(spec))
            assert done.returncode == 0, done.stderr
            return Continued(**json.loads(done.stdout.splitlines()[-1]))
    raise AssertionError(path)


def continued(result: Any) -> Continued:
    return Continued(str(result.output), result.response.provider_details["session_source"])


def model_kwargs(path: str) -> dict[str, Any]:
    return {"session_idle_timeout": 1.0} if path == "expired" else {}


TOOLS = [pytest.param(BASH, id="Bash"), pytest.param(EDIT, id="Edit")]


async def ask_one(backend: OfflineBackend, case: Case, cwd: Path, path: str) -> tuple[Asked, ToolCallPart]:
    """Run until Claude's one call waits for approval, on a model set up for ``path``."""
    asked = await ask(backend, case, cwd, case.brain(cwd), **model_kwargs(path))
    [call] = asked.calls
    return asked, call


def result_of(backend: OfflineBackend, call_id: str) -> tuple[str, bool]:
    """What Claude got as the result of ``call_id`` in the last request."""
    results = {result.tool_use_id: result for result in backend.requests[-1].tool_results()}
    return results[call_id].text, results[call_id].is_error


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", TOOLS)
async def test_a_denied_call_never_runs_and_claude_gets_the_persons_words(
    claude_backend: OfflineBackend, tmp_path: Path, case: Case, path: str
):
    asked, call = await ask_one(claude_backend, case, tmp_path, path)

    run = await go_on(path, asked, claude_backend, case, tmp_path, {call.tool_call_id: ToolDenied(DENIAL)})

    assert case.state(tmp_path) == case.before
    assert result_of(claude_backend, call.tool_call_id) == (DENIAL, True)
    assert run.output == f"tool said: {DENIAL}"
    # Only the waiting path goes on in the turn that waited; the others start a new Claude Code session.
    assert (run.session_source == "live") == (path == "waiting")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", TOOLS)
async def test_an_approved_call_runs_once_as_claude_wrote_it(
    claude_backend: OfflineBackend, tmp_path: Path, case: Case, path: str
):
    asked, call = await ask_one(claude_backend, case, tmp_path, path)

    await go_on(path, asked, claude_backend, case, tmp_path, {call.tool_call_id: True})

    assert case.state(tmp_path) == case.after
    assert not result_of(claude_backend, call.tool_call_id)[1]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", TOOLS)
async def test_an_override_runs_once_with_the_persons_arguments_only(
    claude_backend: OfflineBackend, tmp_path: Path, case: Case, path: str
):
    asked, call = await ask_one(claude_backend, case, tmp_path, path)

    override = ToolApproved(override_args=case.changed_args(tmp_path))
    await go_on(path, asked, claude_backend, case, tmp_path, {call.tool_call_id: override})

    assert case.state(tmp_path) == case.after_changed
    assert not result_of(claude_backend, call.tool_call_id)[1]


def two_calls(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(message, ModelResponse) for message in messages):
        return ModelResponse(parts=[ToolCallPart("Bash", {"command": f"echo {w} >> log.txt"}) for w in ("one", "two")])
    return ModelResponse(parts=[TextPart("done")])


@pytest.mark.parametrize("path", PATHS)
async def test_two_calls_of_one_reply_each_get_their_own_decision(
    claude_backend: OfflineBackend, tmp_path: Path, path: str
):
    asked = await ask(claude_backend, BASH, tmp_path, FunctionModel(two_calls), **model_kwargs(path))
    one, two = asked.calls

    await go_on(
        path, asked, claude_backend, BASH, tmp_path, {one.tool_call_id: ToolDenied(DENIAL), two.tool_call_id: True}
    )

    assert (tmp_path / "log.txt").read_text() == "two\n"
    assert result_of(claude_backend, one.tool_call_id) == (DENIAL, True)
    assert not result_of(claude_backend, two.tool_call_id)[1]


@pytest.mark.parametrize("path", PATHS)
async def test_two_denials_of_one_reply_run_nothing(claude_backend: OfflineBackend, tmp_path: Path, path: str):
    asked = await ask(claude_backend, BASH, tmp_path, FunctionModel(two_calls), **model_kwargs(path))
    one, two = asked.calls

    await go_on(
        path, asked, claude_backend, BASH, tmp_path, {one.tool_call_id: False, two.tool_call_id: ToolDenied(DENIAL)}
    )

    assert not (tmp_path / "log.txt").exists()
    assert result_of(claude_backend, one.tool_call_id) == (ToolDenied().message, True)
    assert result_of(claude_backend, two.tool_call_id) == (DENIAL, True)
