"""The SDK's options as typed settings, each checked where the CLI receives it (its arguments, or the API requests
it makes to the offline backend)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.processes import live_descendants, process_table

pytestmark = pytest.mark.cli


def cli_argv() -> list[str]:
    """The arguments of the one live Claude Code process of this test."""
    mine = live_descendants(os.getpid())
    found = [p.argv for p in process_table() if p.pid in mine and any("--output-format" in a for a in p.argv)]
    assert len(found) == 1, found
    return found[0]


def values_of(argv: list[str], flag: str) -> list[str]:
    return [argv[index + 1] for index, arg in enumerate(argv[:-1]) if arg == flag]


async def test_directories_sandbox_plugins_fallback_and_task_budget_reach_the_cli(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    extra = tmp_path / "extra"
    extra.mkdir()
    plugin = tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "probe", "version": "0.1.0"}))
    settings: ClaudeCodeModelSettings = {
        "claude_code_add_dirs": [extra],
        "claude_code_sandbox": {"enabled": False, "excludedCommands": ["git"]},
        "claude_code_plugins": [str(plugin)],
        "claude_code_fallback_model": "claude-haiku-4-5",
        "claude_code_task_budget": 50_000,
    }

    await Agent(model, model_settings=settings).run("hello")

    argv = cli_argv()
    assert values_of(argv, "--add-dir") == [str(extra)]
    assert values_of(argv, "--plugin-dir") == [str(plugin)]
    assert values_of(argv, "--fallback-model") == ["claude-haiku-4-5"]
    assert values_of(argv, "--task-budget") == ["50000"]
    [cli_settings] = values_of(argv, "--settings")
    assert json.loads(cli_settings)["sandbox"] == {"enabled": False, "excludedCommands": ["git"]}
    # The task budget reaches the API request.
    request = claude_backend.requests[-1]
    assert request.raw.get("output_config", {}).get("task_budget", {}).get("total") == 50_000


async def test_betas_reach_the_api_as_beta_headers(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    settings: ClaudeCodeModelSettings = {"claude_code_betas": ["context-1m-2025-08-07"]}

    await Agent(model).run("hello")
    assert "context-1m-2025-08-07" not in claude_backend.requests[-1].headers.get("anthropic-beta", "")
    await model.aclose()

    await Agent(model, model_settings=settings).run("hello")

    assert values_of(cli_argv(), "--betas") == ["context-1m-2025-08-07"]
    assert "context-1m-2025-08-07" in claude_backend.requests[-1].headers["anthropic-beta"].split(",")


async def test_the_fallback_model_answers_when_the_main_model_is_overloaded(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.fail_next(Failure.http(529), count=3)
    settings: ClaudeCodeModelSettings = {
        "claude_code_fallback_model": "claude-haiku-4-5",
        "claude_code_env": {"CLAUDE_CODE_MAX_RETRIES": "5"},
    }

    result = await Agent(model, model_settings=settings).run("hello")

    # Claude Code retried the main model (the CLI's own retries, allowed here), then switched to the fallback.
    models = [request.raw.get("model") for request in claude_backend.requests]
    assert models == [claude_backend.model_name] * 3 + ["claude-haiku-4-5"]
    assert result.output
    assert result.response.model_name == "claude-haiku-4-5"


async def test_skills_choose_which_skills_of_a_plugin_claude_is_offered(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    plugin = tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "probe", "version": "0.1.0"}))
    (plugin / "skills" / "greet").mkdir(parents=True)
    skill = "---\nname: greet\ndescription: Greets the user warmly in Klingon.\n---\nSay nuqneH.\n"
    (plugin / "skills" / "greet" / "SKILL.md").write_text(skill)
    agent = Agent(model)

    await agent.run(
        "hi",
        model_settings=ClaudeCodeModelSettings(
            {"claude_code_plugins": [plugin], "claude_code_skills": ["probe:greet"]}
        ),
    )
    offered = claude_backend.requests[-1]
    await agent.run(
        "hi",
        model_settings=ClaudeCodeModelSettings(
            {"claude_code_plugins": [plugin], "claude_code_skills": ["probe:other"]}
        ),
    )
    filtered = claude_backend.requests[-1]

    assert "Skill" in offered.tool_names
    assert "Greets the user warmly in Klingon." in json.dumps(offered.raw)
    assert "Skill" in filtered.tool_names
    assert "Klingon" not in json.dumps(filtered.raw)
