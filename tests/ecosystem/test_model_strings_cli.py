"""``"claude-code:<model>"`` model strings through pydantic-ai's model-id resolution, and the command's ``--model``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ModelFallback, SelectModel
from pydantic_ai.exceptions import UserError  # InvalidModelIdError is one
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModels
from claudecode_model.resolve import claude_code_model_name
from claudecode_model.testing import Failure, OfflineBackend

pytestmark = pytest.mark.cli


def echo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers with the last user text."""
    texts = [p.content for p in messages[-1].parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
    return ModelResponse(parts=[TextPart(f"echo: {texts[-1] if texts else ''}")])


@pytest.fixture(autouse=True)
def _echo(claude_backend: OfflineBackend) -> None:
    claude_backend.set_brain(FunctionModel(echo_brain))


@pytest.fixture
async def models(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModels]:
    capability = ClaudeCodeModels(env=claude_backend.cli_env())
    yield capability
    await capability.aclose()


def _responses(messages: list[ModelMessage]) -> list[ModelResponse]:
    return [message for message in messages if isinstance(message, ModelResponse)]


async def test_agent_takes_a_claude_code_model_string(models: ClaudeCodeModels, claude_backend: OfflineBackend):
    agent = Agent("claude-code:haiku", capabilities=[models])

    result = await agent.run("hello")

    assert result.output == "echo: hello"
    [request] = claude_backend.requests
    assert request.model is not None
    assert "haiku" in request.model
    [response] = _responses(result.all_messages())
    assert response.provider_name == "claude-code"
    assert isinstance(models.model("claude-code:haiku"), ClaudeCodeModel)
    assert models.model("claude-code:haiku").model_name == "haiku"

    # The id resolves to the same model in the next run: the conversation continues in the kept CLI process.
    again = await agent.run("and again", message_history=result.all_messages())
    assert again.output == "echo: and again"
    assert (again.all_messages()[-1].provider_details or {})["session_source"] == "live"  # type: ignore[union-attr]


async def test_run_level_model_string_and_default(models: ClaudeCodeModels, claude_backend: OfflineBackend):
    agent = Agent(capabilities=[models])

    first = await agent.run("one", model="claude-code:sonnet")
    second = await agent.run("two", model="claude-code:default")

    assert (first.output, second.output) == ("echo: one", "echo: two")
    first_model, second_model = (request.model or "" for request in claude_backend.requests)
    assert "sonnet" in first_model
    assert "sonnet" not in second_model  # the CLI's own default model
    assert models.model("claude-code:default").model_name == "default"


async def test_model_fallback_capability_resolves_claude_code_strings(
    models: ClaudeCodeModels, claude_backend: OfflineBackend
):
    claude_backend.fail_next(Failure.http(401, "invalid x-api-key"))
    agent = Agent("claude-code:opus", capabilities=[models, ModelFallback("claude-code:haiku")])

    result = await agent.run("hello")

    assert result.output == "echo: hello"
    first, second = (request.model or "" for request in claude_backend.requests)
    assert "opus" in first
    assert "haiku" in second
    [response] = _responses(result.all_messages())
    assert "haiku" in (response.model_name or "")


async def test_select_model_picks_claude_code_strings_per_step(
    models: ClaudeCodeModels, claude_backend: OfflineBackend
):
    picks = iter(["claude-code:haiku", "claude-code:sonnet"])
    agent = Agent(capabilities=[models, SelectModel(lambda ctx: next(picks))])

    first = await agent.run("one")
    second = await agent.run("two")

    assert (first.output, second.output) == ("echo: one", "echo: two")
    first_model, second_model = (request.model or "" for request in claude_backend.requests)
    assert "haiku" in first_model
    assert "sonnet" in second_model


async def test_fallback_model_takes_the_resolved_instances(models: ClaudeCodeModels, claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(401, "invalid x-api-key"))
    fallback = FallbackModel(models.model("claude-code:opus"), models.model("claude-code:haiku"))

    result = await Agent(fallback).run("hello")

    assert result.output == "echo: hello"
    assert ["opus" in (r.model or "") for r in claude_backend.requests] == [True, False]


async def test_agent_spec_file_with_the_capability(claude_backend: OfflineBackend, tmp_path: Path):
    spec = {
        "model": "claude-code:haiku",
        "instructions": "Answer briefly.",
        "capabilities": [{"ClaudeCodeModels": {"env": claude_backend.cli_env(), "keep_sessions": 0}}],
    }
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(spec))

    agent = Agent.from_file(path, custom_capability_types=[ClaudeCodeModels])
    result = await agent.run("hello")

    assert result.output == "echo: hello"
    [request] = claude_backend.requests
    assert "haiku" in (request.model or "")
    assert "Answer briefly." in request.system


@pytest.mark.usefixtures("run_sync_loop")
def test_other_model_ids_are_left_to_pydantic_ai():
    agent = Agent("test", capabilities=[ClaudeCodeModels()])

    assert agent.run_sync("hi", model=TestModel(custom_output_text="from test")).output == "from test"
    assert agent.run_sync("hi").output == "success (no tool calls)"


@pytest.mark.parametrize("model_id", ["claude-code:", "claude-code: sonnet", "claude-code:son net"])
async def test_an_id_without_a_model_is_a_clear_error(model_id: str):
    agent = Agent(model_id, capabilities=[ClaudeCodeModels()])

    with pytest.raises(UserError, match="names no model"):
        await agent.run("hi")


def test_model_names_of_ids():
    assert claude_code_model_name("claude-code:sonnet") == "sonnet"
    assert claude_code_model_name("claude-code:claude-opus-4-5-20251101") == "claude-opus-4-5-20251101"
    assert claude_code_model_name("claude-code:default") is None
    with pytest.raises(UserError, match="'openai:gpt-5' is not a Claude Code model id"):
        claude_code_model_name("openai:gpt-5")


def test_the_command_takes_claude_code_strings(claude_backend: OfflineBackend):
    # `run` uses the CLI's login: here the login is the offline backend's environment.
    command = [sys.executable, "-m", "claudecode_model.cli", "run", "--no-stream", "--model", "claude-code:haiku", "hi"]
    env = {**os.environ, **claude_backend.cli_env()}
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "echo: hi"
    [request] = claude_backend.requests
    assert "haiku" in (request.model or "")


def test_the_command_rejects_an_empty_claude_code_string():
    completed = subprocess.run(
        [sys.executable, "-m", "claudecode_model.cli", "run", "--offline", "--model", "claude-code:", "hi"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode != 0
    assert "names no model" in completed.stderr


def test_the_capability_takes_every_model_argument_with_the_same_defaults():
    import dataclasses
    import inspect

    model_parameters = {
        name: parameter.default
        for name, parameter in inspect.signature(ClaudeCodeModel.__init__).parameters.items()
        if name not in ("self", "model_name")
    }
    capability_fields = {
        field.name: field.default
        for field in dataclasses.fields(ClaudeCodeModels)
        if field.init and field.name in model_parameters
    }

    assert capability_fields == model_parameters


def test_resolved_models_get_the_capability_arguments():
    from claudecode_model import SQLiteSessionStore

    store = SQLiteSessionStore(":memory:")
    capability = ClaudeCodeModels(
        spare_sessions=0, max_processes=3, tool_execution="cli", session_store=store, keep_sessions=2
    )
    model = capability.model("claude-code:haiku")

    assert model._resources.limits.spare_sessions == 0
    assert model._resources.limits.max_processes == 3
    assert model._resources.limits.keep_sessions == 2
    assert model._resources.execution == "cli"
    assert model._resources.session_store is store
