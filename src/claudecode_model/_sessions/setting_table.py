"""Every setting the model reads, declared once: what it fixes, the CLI option or environment it sets, its range, and
whether the early CLI predicts it.

The table drives the checks of :mod:`claudecode_model._settings_check` (the types come from
:class:`~claudecode_model.settings.ClaudeCodeModelSettings`, the ranges from here), the options that
:func:`~claudecode_model._sessions.options.build_options` sets from a setting alone (:func:`direct_options`) and the
environment (:func:`request_env`), the session signature (:func:`signed_settings`: every setting that fixes a CLI
session, by its value), which of them a parked CLI takes when it is claimed (:data:`CLAIMED`, the rest fix its launch:
:func:`launch_settings`) and which settings the early CLI predicts (:data:`PREDICTED`).
``tests/model/test_setting_table_unit.py`` fails when a key of the TypedDict, an SDK option mapped to a setting, or a
signed setting's effect on the signature is missing. Free of claude-agent-sdk: the early CLI reads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from claudecode_model._sessions.cli_env import library_env
from claudecode_model._sessions.inactivity import DEFAULT_INACTIVITY_TIMEOUT, cli_timeout_env
from claudecode_model._tools.builtin_names import unknown_builtin_tools
from claudecode_model._tools.execution import DEFAULT_PERMISSION_MODE

__all__ = [
    "CLAIMED",
    "CLAIM_OPTIONS",
    "PREDICTED",
    "SESSION_STATE_ENV",
    "SETTINGS",
    "TOOL_SEARCH_ENV",
    "Scope",
    "Setting",
    "direct_options",
    "launch_settings",
    "request_env",
    "signed_settings",
]

Scope = Literal["session", "request"]
"""``"session"``: the setting fixes how a CLI process behaves (it is in the session signature, so a different value
never shares a live CLI); ``"request"``: read per request (a deadline, whether a session is kept)."""

SESSION_STATE_ENV = "CLAUDE_CODE_SDK_READS_SESSION_STATE"
"""Asks the CLI for two state frames per turn that only the SDK's one-shot ``query()`` reads (to know when it may
close the CLI's input); a ``ClaudeSDKClient`` session keeps its input open, so this library turns them off (each
costs the SDK a parse), unless the user's environment chose a value."""


TOOL_SEARCH_ENV = "ENABLE_TOOL_SEARCH"
"""Whether the CLI may defer MCP tools behind tool search; ``"false"`` (unless the user chose) wherever the agent's
tools are served, so that Claude is offered them directly."""


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Setting:
    """How the model reads one setting."""

    scope: Scope
    default: Any = None
    """The value an absent setting has (an equal value is not signed: it fixes nothing new)."""
    option: str | None = None
    """The ``ClaudeAgentOptions`` field set from this setting alone, as ``convert`` makes it of the value."""
    convert: Callable[[Any], Any] = _same
    feeds: tuple[str, ...] = ()
    """``ClaudeAgentOptions`` fields this setting contributes to together with others (built in ``options.py``)."""
    env: Callable[[Any], dict[str, str]] | None = None
    """The CLI environment entries this setting sets alone (for a value other than ``None``)."""
    predicted: bool = False
    """Whether the early CLI predicts its effect on the command line and environment (or it has none)."""
    check: Callable[[Any], str | None] | None = None
    """A range beyond the type: what is wrong with a value, or ``None``."""
    claimed: bool = False
    """Whether a parked CLI (started with ``--await-claim``) takes its effect when it is claimed (the options it
    sets are among :data:`CLAIM_OPTIONS`), so that one parked CLI serves sessions that differ in it."""


def _positive(value: Any) -> str | None:
    return None if value > 0 else "must be greater than 0"


def _not_negative(value: Any) -> str | None:
    return None if value >= 0 else "must be 0 or more"


def _thinking_budget(value: Any) -> str | None:
    return None if not isinstance(value, int) or value > 0 else "a token budget must be greater than 0"


def _existing_directory(value: Any) -> str | None:
    return None if Path(value).expanduser().is_dir() else f"{str(value)!r} is not an existing directory"


def _non_empty_names(value: Any) -> str | None:
    return None if all(name for name in value) else "names must not be empty"


def _existing_directories(value: Any) -> str | None:
    missing = [str(path) for path in value if not Path(path).expanduser().is_dir()]
    return f"{', '.join(map(repr, missing))} not an existing directory" if missing else None


def _sandbox_keys(value: Any) -> str | None:
    from claude_agent_sdk.types import SandboxSettings

    unknown = sorted(set(value) - set(SandboxSettings.__annotations__))
    if unknown:
        return f"unknown sandbox settings {unknown} (known: {', '.join(sorted(SandboxSettings.__annotations__))})"
    return None


def _builtin_tools(value: Any) -> str | None:
    return None if isinstance(value, str) else _non_empty_names(value) or unknown_builtin_tools(value)


def _text_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


SETTINGS: Mapping[str, Setting] = {
    # pydantic-ai's standard settings the model reads (the others are declared in _settings_check.py)
    "max_tokens": Setting(
        "session", env=lambda value: {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(value)}, predicted=True, check=_positive
    ),
    # How often the CLI retries a failed API request itself (0: it reports the first failure).
    "max_retries": Setting(
        "session", env=lambda value: {"CLAUDE_CODE_MAX_RETRIES": str(value)}, predicted=True, check=_not_negative
    ),
    "timeout": Setting("request", predicted=True, check=_positive),
    "thinking": Setting("session", feeds=("thinking", "effort")),
    # the library's own
    "claude_code_timeout": Setting("request", predicted=True, check=_positive),
    "claude_code_inactivity_timeout": Setting(
        "session",
        default=DEFAULT_INACTIVITY_TIMEOUT,
        feeds=("env",),
        predicted=True,
        check=lambda value: None if value is None else _positive(value),
    ),
    "claude_code_limit_reset_wait": Setting("request", predicted=True, check=_not_negative),
    "claude_code_max_turns": Setting("session", option="max_turns", predicted=True, check=_positive),
    "claude_code_max_budget_usd": Setting("session", option="max_budget_usd", check=_positive),
    "claude_code_cwd": Setting(
        "session", option="cwd", convert=_text_or_none, predicted=True, check=_existing_directory, claimed=True
    ),
    "claude_code_permission_mode": Setting(
        "session", default=DEFAULT_PERMISSION_MODE, feeds=("permission_mode",), predicted=True, claimed=True
    ),
    "claude_code_allowed_tools": Setting(
        "session", default=[], feeds=("allowed_tools",), predicted=True, check=_non_empty_names
    ),
    "claude_code_disallowed_tools": Setting(
        "session", default=[], option="disallowed_tools", convert=list, predicted=True, check=_non_empty_names
    ),
    "claude_code_builtin_tools": Setting("session", feeds=("tools", "allowed_tools"), check=_builtin_tools),
    "claude_code_builtin_tool_policy": Setting("session", feeds=("can_use_tool", "hooks")),
    "claude_code_tool_parameter_restrictions": Setting("session", feeds=("hooks",)),
    "claude_code_system_prompt_append": Setting("session", feeds=("system_prompt",), predicted=True, claimed=True),
    "claude_code_thinking": Setting("session", feeds=("thinking", "effort", "env"), check=_thinking_budget),
    "claude_code_effort": Setting("session", feeds=("effort",)),
    "claude_code_extra_args": Setting(
        "session", default={}, option="extra_args", convert=dict, predicted=True, check=_non_empty_names
    ),
    "claude_code_env": Setting("session", default={}, feeds=("env",), predicted=True),
    "claude_code_setting_sources": Setting(
        "session", default=[], option="setting_sources", convert=list, predicted=True
    ),
    "claude_code_interpret_prompts": Setting("session", default=False, feeds=("verbatim_prompts",), predicted=True),
    "claude_code_session": Setting("request", default="auto", predicted=True),
    "claude_code_agents": Setting("session", feeds=("agents", "tools", "allowed_tools", "env")),
    # Decides the request's tool servers, whose tools are signed (its default is the model's tool_execution).
    "claude_code_tool_execution": Setting("request", predicted=True),
    "claude_code_hooks": Setting("session", feeds=("hooks",)),
    "claude_code_fallback_model": Setting(
        "session",
        option="fallback_model",
        check=lambda value: None if value.strip() else "it must not be empty",
    ),
    "claude_code_add_dirs": Setting(
        "session", default=[], option="add_dirs", convert=list, check=_existing_directories
    ),
    "claude_code_sandbox": Setting("session", option="sandbox", check=_sandbox_keys),
    "claude_code_skills": Setting(
        "session",
        option="skills",
        feeds=("tools",),
        check=lambda value: None if isinstance(value, str) else _non_empty_names(value),
    ),
    "claude_code_plugins": Setting(
        "session",
        default=[],
        option="plugins",
        convert=lambda paths: [{"type": "local", "path": str(path)} for path in paths],
        check=_existing_directories,
    ),
    "claude_code_betas": Setting("session", default=[], option="betas", convert=list, check=_non_empty_names),
    "claude_code_task_budget": Setting(
        "session",
        option="task_budget",
        convert=lambda budget: {"total": budget} if budget is not None else None,
        check=_positive,
    ),
    "claude_code_compaction": Setting("session", default=False, feeds=("env",), predicted=True),
    "claude_code_auth": Setting("session", default="auto", feeds=("env",), predicted=True),
}
"""Every setting the model reads, by name."""

CLAIM_OPTIONS = frozenset({"cwd", "system_prompt", "permission_mode", "model"})
"""The ``ClaudeAgentOptions`` fields a claim of a parked CLI sets (``claim_session``: working directory, system
prompt, permission mode; then ``set_model``); every other option fixes the CLI at its launch."""

CLAIMED = frozenset(name for name, setting in SETTINGS.items() if setting.claimed)
"""The settings a parked CLI takes when it is claimed."""

PREDICTED = frozenset(name for name, setting in SETTINGS.items() if setting.predicted)
"""The settings whose effect the early CLI predicts (or that have none on how a CLI starts)."""


def direct_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ClaudeAgentOptions`` fields set from one setting each."""
    return {
        setting.option: setting.convert(settings.get(name, setting.default))
        for name, setting in SETTINGS.items()
        if setting.option is not None
    }


def signed_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the settings that fix a CLI session, as far as they differ from their defaults."""
    signed = {}
    for name, setting in SETTINGS.items():
        value = settings.get(name, setting.default)
        if setting.scope == "session" and value != setting.default:
            signed[name] = value
    return signed


def launch_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`signed_settings` without the settings a claim sets: what a parked CLI must have been launched with."""
    return {name: value for name, value in signed_settings(settings).items() if name not in CLAIMED}


def request_env(
    settings: Mapping[str, Any],
    base: Mapping[str, str],
    *,
    cache: object,
    serves_tools: bool,
    thinking_disabled: bool = False,
) -> dict[str, str]:
    """The CLI's environment for a request: ``base`` (the model's ``env``), the user's ``claude_code_env``, the
    settings' own entries, and the library's switches (each left alone where the user chose a value)."""
    env = {**base, **settings.get("claude_code_env", {})}
    for name, setting in SETTINGS.items():
        if setting.env is not None and (value := settings.get(name)) is not None:
            env.update(setting.env(value))
    if serves_tools:
        # The agent's tools are offered to Claude directly, never deferred behind tool search.
        env.setdefault(TOOL_SEARCH_ENV, "false")
    if not any(name.upper() == SESSION_STATE_ENV for name in (*env, *os.environ)):
        env[SESSION_STATE_ENV] = "0"
    env.update(library_env(settings, cache, env))
    env.update(cli_timeout_env(settings, env))  # the CLI's API timeouts below the turn's inactivity bound
    if thinking_disabled:
        env["CLAUDE_CODE_DISABLE_THINKING"] = "1"
    return env
