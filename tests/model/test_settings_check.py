"""Settings and constructor arguments are checked before anything starts, with errors that name the culprit (the
runs are on the in-memory CLI: what is checked is that nothing reached it)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnsupportedSettingWarning, UserError

from claudecode_model import ClaudeCodeModel, ClaudeCodeSettingsError, ToolValidationError
from claudecode_model.testing import ScriptedCLI

BAD_SETTINGS: list[tuple[dict[str, Any], str]] = [
    ({"claude_code_timeout": "5s"}, "claude_code_timeout='5s': it must be a number"),
    ({"timeout": "5"}, "timeout='5': it must be a number"),
    ({"claude_code_builtin_tools": "Read"}, "it must be a list of strings or one of 'claude_code'"),
    ({"claude_code_thinking": "high"}, "one of 'adaptive', 'disabled' or an integer"),
    ({"claude_code_env": {"A": 1}}, "claude_code_env={'A': 1}: it must be a dict of strings to strings"),
    ({"claude_code_max_turns": "three"}, "claude_code_max_turns='three': it must be an integer"),
    ({"claude_code_permission_mode": "bypass"}, "'default', 'acceptEdits', 'plan', 'dontAsk', 'auto'"),
    ({"claude_code_session": "fresh"}, "claude_code_session='fresh': it must be one of 'auto', 'new'"),
    ({"claude_code_timeout": 0}, "claude_code_timeout=0: must be greater than 0"),
    ({"claude_code_max_budget_usd": -1.0}, "must be greater than 0"),
    ({"max_tokens": "100"}, "max_tokens='100': it must be an integer"),
    ({"claude_code_cwd": "/no/such/dir"}, "'/no/such/dir' is not an existing directory"),
    ({"claude_code_allowed_tools": ["Read", 3]}, "the item at [1] is wrong"),
    ({"claude_code_setting_sources": ["usr"]}, "one of 'user', 'project', 'local'"),
    ({"thinking": "extreme"}, "thinking='extreme'"),
    ({"claude_code_timout": 3}, "Unknown setting 'claude_code_timout'. Did you mean 'claude_code_timeout'?"),
    # 0.0.52's names, which would otherwise be ignored like another provider's keys (a budget cap silently gone)
    ({"max_budget_usd": 1.0}, "Unknown setting 'max_budget_usd': the setting is called 'claude_code_max_budget_usd'"),
    ({"max_turns": 3}, "the setting is called 'claude_code_max_turns'"),
    ({"working_directory": "/tmp"}, "the setting is called 'claude_code_cwd'"),
    ({"append_system_prompt": "Be brief."}, "the setting is called 'claude_code_system_prompt_append'"),
    # 0.0.52's ways to pick a conversation: here the message history does (silence would start a new one)
    ({"continue_conversation": True}, "'continue_conversation' of 0.0.52 is not supported: a run continues"),
    ({"resume": "0b4c2e7a"}, "'resume' of 0.0.52 is not supported: a run resumes the Claude Code session of"),
]


@pytest.mark.parametrize(("settings", "message"), BAD_SETTINGS)
def test_bad_model_settings_are_refused_at_construction(settings: dict[str, Any], message: str):
    with pytest.raises(ClaudeCodeSettingsError) as raised:
        ClaudeCodeModel(settings=settings)  # type: ignore[arg-type]

    assert message in str(raised.value)
    assert isinstance(raised.value, UserError)
    assert isinstance(raised.value, ValueError)


def test_good_settings_pass():
    ClaudeCodeModel(
        settings={
            "claude_code_timeout": 5,
            "timeout": 2.5,
            "claude_code_builtin_tools": ["Read"],
            "claude_code_thinking": 2048,
            "claude_code_cwd": "/",
            "thinking": "high",
            "claude_code_tool_parameter_restrictions": {"Bash": {"command": lambda command: "rm" in command}},
            "claude_code_extra_args": {"bare-flag": None, "flag": "value"},
            "claude_code_env": {"A": "1"},
            "temperature": 0.5,
        }
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"keep_sessions": -1}, "keep_sessions=-1"),
        ({"keep_sessions": 1.5}, "keep_sessions=1.5"),
        ({"session_idle_timeout": -5}, "session_idle_timeout=-5"),
        ({"session_idle_timeout": "300"}, "session_idle_timeout='300'"),
        ({"tool_transport": "grpc"}, "tool_transport='grpc': it must be one of 'auto', 'sdk', 'stdio'"),
    ],
)
def test_bad_constructor_arguments_are_refused(arguments: dict[str, Any], message: str):
    with pytest.raises(ClaudeCodeSettingsError) as raised:
        ClaudeCodeModel(**arguments)

    assert message in str(raised.value)
    assert not isinstance(raised.value, ToolValidationError)


@pytest.mark.parametrize(("settings", "message"), BAD_SETTINGS[:8])
async def test_bad_run_settings_fail_before_the_cli_starts(settings: dict[str, Any], message: str):
    cli = ScriptedCLI(["never asked"])
    model = ClaudeCodeModel(cli_transports=cli)
    agent = Agent(model)
    try:
        with pytest.raises(ClaudeCodeSettingsError) as raised:
            await agent.run("hello", model_settings=settings)  # type: ignore[call-overload]  # wrong on purpose
    finally:
        await model.aclose()

    assert message in str(raised.value)
    assert cli.opened == []  # no CLI started
    assert cli.received == []  # no CLI turn


async def test_unsupported_standard_settings_are_declared_the_pydantic_ai_way():
    cli = ScriptedCLI(["ok"])
    model = ClaudeCodeModel(cli_transports=cli, keep_sessions=0)
    agent = Agent(model)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await agent.run("hello", model_settings={"temperature": 0.2, "stop_sequences": ["x"], "max_tokens": 500})
    finally:
        await model.aclose()

    assert {"temperature", "stop_sequences", "seed", "extra_headers"} <= ClaudeCodeModel.unsupported_settings
    assert "max_tokens" not in ClaudeCodeModel.unsupported_settings
    assert "max_retries" not in ClaudeCodeModel.unsupported_settings  # CLAUDE_CODE_MAX_RETRIES
    assert "timeout" not in ClaudeCodeModel.unsupported_settings  # the CLI turn's deadline
    unsupported = sorted(str(w.message) for w in caught if issubclass(w.category, UnsupportedSettingWarning))
    # pydantic-ai warns about a setting that changes what the request guarantees; this model about a tuning knob too.
    assert len(unsupported) == 2
    assert "`stop_sequences` setting is not supported" in unsupported[0]
    assert "`temperature` setting is not supported" in unsupported[1]
    assert len(cli.received) == 1
