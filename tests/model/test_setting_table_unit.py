"""The table of settings (``_sessions/setting_table.py``) names every setting once, and each of its users follows it:
the type check, the CLI options, the session signature and the early CLI's prediction."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from claudecode_model import ClaudeCodeModel, ClaudeCodeSettingsError
from claudecode_model._sessions import early_cli
from claudecode_model._sessions.sdk_options import SDK_OPTIONS, Exposed
from claudecode_model._sessions.setting_table import CLAIM_OPTIONS, CLAIMED, PREDICTED, SETTINGS, direct_options
from claudecode_model._settings_check import check_settings
from claudecode_model._turns import start
from claudecode_model.settings import ClaudeCodeModelSettings
from tests._support.options import options_for

HERE = str(Path(__file__).parent)


async def _hook(input_data: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
    return {}


EXAMPLES: dict[str, Any] = {
    "max_tokens": 1000,
    "max_retries": 0,
    "timeout": 30,
    "thinking": "high",
    "claude_code_timeout": 30,
    "claude_code_inactivity_timeout": 100,
    "claude_code_limit_reset_wait": 5,
    "claude_code_max_turns": 3,
    "claude_code_max_budget_usd": 0.5,
    "claude_code_cwd": HERE,
    "claude_code_permission_mode": "default",
    "claude_code_allowed_tools": ["Read"],
    "claude_code_disallowed_tools": ["Bash"],
    "claude_code_builtin_tools": ["Read"],
    "claude_code_builtin_tool_policy": lambda call: None,
    "claude_code_tool_parameter_restrictions": {"Bash": {"run_in_background": True}},
    "claude_code_system_prompt_append": "Appended.",
    "claude_code_thinking": "adaptive",
    "claude_code_effort": "low",
    "claude_code_extra_args": {"verbose": None},
    "claude_code_env": {"EXTRA": "1"},
    "claude_code_setting_sources": ["project"],
    "claude_code_interpret_prompts": True,
    "claude_code_session": "new",
    "claude_code_agents": {"reviewer": {"description": "Reviews.", "prompt": "Review."}},
    "claude_code_tool_execution": "cli",
    "claude_code_hooks": {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[_hook])]},
    "claude_code_fallback_model": "claude-haiku-4-5",
    "claude_code_add_dirs": [HERE],
    "claude_code_sandbox": {"enabled": True},
    "claude_code_skills": "all",
    "claude_code_plugins": [HERE],
    "claude_code_betas": ["context-1m-2025-08-07"],
    "claude_code_task_budget": 1000,
    "claude_code_compaction": True,
    "claude_code_auth": "subscription",
}
"""A valid value of each setting, other than its default."""

SIGNED_THROUGH_THE_REQUEST = {"claude_code_tool_execution": "it decides the tool servers, whose tools are signed"}
"""Settings read per request that still change the signature, through what the request builds from them."""


def test_the_table_names_every_setting_of_the_typed_dict_and_the_standard_ones_read():
    own = {name for name in ClaudeCodeModelSettings.__annotations__ if name.startswith("claude_code_")}
    standard = set(ModelSettings.__annotations__)

    assert {name for name in SETTINGS if name.startswith("claude_code_")} == own
    assert {name for name in SETTINGS if not name.startswith("claude_code_")} <= standard


def test_every_setting_of_the_table_has_an_example():
    assert sorted(SETTINGS.keys() - EXAMPLES.keys()) == []
    assert sorted(EXAMPLES.keys() - SETTINGS.keys()) == []


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_setting_is_checked(name: str):
    check_settings({name: EXAMPLES[name]})
    with pytest.raises(ClaudeCodeSettingsError, match=name):
        check_settings({name: object()})


def test_each_option_the_sdk_table_maps_to_a_setting_is_set_by_that_setting():
    fields = {field.name for field in dataclasses.fields(ClaudeAgentOptions)}
    mapped = {
        (option, name)
        for option, use in SDK_OPTIONS.items()
        if isinstance(use, Exposed)
        for name in use.via
        if name in SETTINGS
    }
    reached = {
        (option, name)
        for name, setting in SETTINGS.items()
        for option in (*([setting.option] if setting.option else []), *setting.feeds)
    }

    assert sorted(mapped - reached) == []
    assert {option for option, _ in reached} <= fields


@pytest.mark.parametrize("name", sorted(name for name, setting in SETTINGS.items() if setting.option is not None))
def test_a_setting_with_an_option_of_its_own_sets_it(name: str):
    setting = SETTINGS[name]
    assert setting.option is not None

    options, _ = options_for({name: EXAMPLES[name]})

    assert getattr(options, setting.option) == setting.convert(EXAMPLES[name])
    assert direct_options({name: EXAMPLES[name]})[setting.option] == getattr(options, setting.option)


def test_the_settings_read_per_request_are_these():
    """A row moved out of the signature lets two configurations share one live CLI: that takes a change here too."""
    per_request = {name for name, setting in SETTINGS.items() if setting.scope == "request"}

    assert per_request == {
        "timeout",
        "claude_code_timeout",
        "claude_code_limit_reset_wait",
        "claude_code_session",
        "claude_code_tool_execution",
    }


@pytest.mark.parametrize("name", sorted(SETTINGS))
async def test_a_setting_that_fixes_a_session_changes_its_signature_and_no_other_does(name: str):
    plain = await _signature({})
    changed = await _signature({name: EXAMPLES[name]})

    if SETTINGS[name].scope == "session" or name in SIGNED_THROUGH_THE_REQUEST:
        assert changed != plain
    else:
        assert changed == plain


async def test_a_setting_at_its_default_shares_the_session_of_no_setting():
    defaults = {name: setting.default for name, setting in SETTINGS.items() if setting.default not in (None, [], {})}

    assert await _signature(defaults) == await _signature({})


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_early_cli_predicts_the_settings_the_table_says_and_no_other(name: str):
    model = ClaudeCodeModel()
    params = ModelRequestParameters()
    messages: list[Any] = [ModelRequest(parts=[UserPromptPart("hi")])]

    prediction, why = early_cli.predict_launch(model._resources, messages, {name: EXAMPLES[name]}, params)

    if name in PREDICTED:
        assert prediction is not None, why
    else:
        assert prediction is None
        assert why == f"settings [{name!r}] are not predicted"


@pytest.mark.parametrize("name", sorted(SETTINGS))
async def test_a_claimed_setting_keeps_the_launch_signature_and_every_other_session_setting_changes_it(name: str):
    """A parked CLI serves sessions that differ only in what its claim sets; any other difference needs another
    launch (or, for settings the CLI reads where it starts, no parked CLI at all: ``None``). The settings read per
    request keep it too: the tool servers they decide are served at the claim, whatever runs their tools."""
    plain = await _signature({}, launch=True)
    changed = await _signature({name: EXAMPLES[name]}, launch=True)

    assert plain is not None
    if name in CLAIMED or SETTINGS[name].scope == "request":
        assert changed == plain
    else:
        assert changed != plain


def test_a_claimed_setting_sets_only_what_a_claim_sets():
    for name in CLAIMED:
        setting = SETTINGS[name]
        assert {*setting.feeds, *([setting.option] if setting.option else [])} <= CLAIM_OPTIONS, name
        assert setting.scope == "session", name


async def _signature(settings: dict[str, Any], *, launch: bool = False) -> str | None:
    """The session signature (or ``launch`` signature) of a request with one function tool, as a turn's preparation
    builds it."""
    model = ClaudeCodeModel(tool_transport="sdk")
    params = ModelRequestParameters(
        function_tools=[ToolDefinition(name="probe", parameters_json_schema={"type": "object"})]
    )
    messages: list[Any] = [ModelRequest(parts=[UserPromptPart("hi")])]
    try:
        prepared = await start._prepare(model._resources._runner(), messages, settings, params, keep=True)  # type: ignore[arg-type]
    finally:
        await model.aclose()
    return prepared.request.launch_signature if launch else prepared.request.signature
