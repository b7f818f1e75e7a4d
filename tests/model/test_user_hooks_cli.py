"""The user's own Claude Code hooks run beside the library's, through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._tools.hook_output import deny, pre_tool_use
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def bash_then_report(command: str) -> FunctionModel:
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(message, ModelResponse) for message in messages):
            return ModelResponse(parts=[ToolCallPart("Bash", {"command": command})])
        results = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        return ModelResponse(parts=[TextPart("said: " + " | ".join(str(r.content).strip() for r in results))])

    return FunctionModel(brain)


async def test_user_hooks_see_built_in_calls_and_may_deny_them(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    seen: list[tuple[str, str, Any]] = []

    async def before(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        assert hook_input["hook_event_name"] == "PreToolUse"
        seen.append(("pre", hook_input["tool_name"], hook_input["tool_input"]))
        if "secret" in hook_input["tool_input"].get("command", ""):
            return deny("the user's hook keeps secrets")
        return {}

    async def after(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        assert hook_input["hook_event_name"] == "PostToolUse"
        seen.append(("post", hook_input["tool_name"], hook_input["tool_response"]))
        return {}

    settings: ClaudeCodeModelSettings = {
        "claude_code_builtin_tools": ["Bash"],
        "claude_code_cwd": str(tmp_path),
        "claude_code_hooks": {
            "PreToolUse": [HookMatcher(matcher="Bash", hooks=[before])],
            "PostToolUse": [HookMatcher(matcher="Bash", hooks=[after])],
        },
    }
    agent = Agent(model, model_settings=settings)

    claude_backend.set_brain(bash_then_report("echo hooked"))
    ran = await agent.run("run it")

    assert ran.output == "said: hooked"
    assert [(kind, name) for kind, name, _ in seen] == [("pre", "Bash"), ("post", "Bash")]
    assert seen[0][2]["command"] == "echo hooked"
    assert "hooked" in str(seen[1][2])

    seen.clear()
    claude_backend.set_brain(bash_then_report("cat secret.txt"))
    denied = await agent.run("read the secret")

    assert "the user's hook keeps secrets" in denied.output
    assert [kind for kind, _, _ in seen] == ["pre"]


async def test_a_users_allow_does_not_lift_the_librarys_own_denial(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    async def allow_everything(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        return pre_tool_use("allow")

    (tmp_path / "keep.txt").write_text("keep")
    settings: ClaudeCodeModelSettings = {
        "claude_code_builtin_tools": ["Bash"],
        "claude_code_cwd": str(tmp_path),
        "claude_code_tool_parameter_restrictions": {"Bash": {"command": lambda command: "rm " in command}},
        "claude_code_hooks": {"PreToolUse": [HookMatcher(matcher=None, hooks=[allow_everything])]},
    }
    claude_backend.set_brain(bash_then_report("rm keep.txt"))

    result = await Agent(model, model_settings=settings).run("delete it")

    assert (tmp_path / "keep.txt").exists()
    assert "is not allowed for Bash" in result.output
