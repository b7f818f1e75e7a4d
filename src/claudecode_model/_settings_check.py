"""Checking settings and constructor arguments before anything starts (no CLI process, no API request).

The settings checked are those of :data:`~claudecode_model._sessions.setting_table.SETTINGS`; the allowed types come
from :class:`~claudecode_model.settings.ClaudeCodeModelSettings`, and a few keys add a range there (positive numbers,
an existing directory). Mistakes raise :class:`~claudecode_model.exceptions.ClaudeCodeSettingsError`
(a pydantic-ai ``UserError`` and a ``ValueError``) naming the setting and what it allows.
"""

from __future__ import annotations

import asyncio
import collections.abc
import difflib
import functools
import logging
import types
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import InstanceOf, TypeAdapter, ValidationError
from pydantic_ai.settings import ModelSettingName

from claudecode_model._sessions.setting_table import SETTINGS
from claudecode_model._tools.execution import check_transport_available
from claudecode_model.exceptions import ClaudeCodeSettingsError
from claudecode_model.settings import ClaudeCodeModelSettings

if TYPE_CHECKING:
    from claudecode_model._sessions.limits import ProcessLimits

__all__ = ["UNSUPPORTED_STANDARD_SETTINGS", "check_model_arguments", "check_request_settings", "check_settings"]

logger = logging.getLogger(__name__)

PREFIX = "claude_code_"
TRANSPORTS = ("auto", "sdk", "stdio")

UNSUPPORTED_STANDARD_SETTINGS: frozenset[ModelSettingName] = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "seed",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "parallel_tool_calls",
        "extra_headers",
        "extra_body",
        "service_tier",
        "citations",
    }
)
"""Standard settings the Claude Code CLI has no way to honour: ``ClaudeCodeModel.unsupported_settings``, which
pydantic-ai's ``prepare_request`` warns about (``UnsupportedSettingWarning``) for those that change what a request
guarantees."""

_STANDARD_OVERRIDES: dict[str, Any] = {"timeout": int | float}
"""Narrower types than pydantic-ai declares: the CLI turn deadline is a number of seconds (no ``httpx.Timeout``)."""


_SDK_TYPES = ("HookEvent", "HookMatcher", "SandboxSettings")
"""claude-agent-sdk types some settings are declared with: the SDK is imported only to check those settings."""


@functools.cache
def _hints(*, with_sdk: bool = False) -> dict[str, Any]:
    if with_sdk:
        import claude_agent_sdk.types as sdk_types

        # The SDK's TypedDicts are typing's, which pydantic cannot check on Python 3.11: a hook matcher is checked
        # as an instance, the sandbox settings as a dict whose keys are those of SandboxSettings.
        names = {
            "HookEvent": sdk_types.HookEvent,
            "HookMatcher": InstanceOf[sdk_types.HookMatcher],
            "SandboxSettings": dict[str, Any],
        }
    else:
        names = dict.fromkeys(_SDK_TYPES, Any)
    hints = get_type_hints(ClaudeCodeModelSettings, localns=names)
    return {name: _STANDARD_OVERRIDES.get(name, hints[name]) for name in SETTINGS}


@functools.cache
def _needs_sdk(name: str) -> bool:
    annotation = ClaudeCodeModelSettings.__annotations__.get(name)
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__forward_arg__", "")
    return any(sdk_name in text for sdk_name in _SDK_TYPES)


def _hint(name: str) -> Any:
    return _hints(with_sdk=_needs_sdk(name))[name]


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(_hint(name))


def describe(hint: Any) -> str:
    """A reader's description of a type hint: ``a number``, ``one of 'a', 'b'``, ``a list of strings``."""
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(value) for value in get_args(hint))
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        none = ["None"] if len(options) < len(get_args(hint)) else []
        if set(options) == {int, float}:
            return " or ".join(["a number", *none])
        return " or ".join([*(describe(arg) for arg in options), *none])
    if origin is collections.abc.Callable:
        return "a function"
    if origin is list:
        return f"a list of {_plural(get_args(hint)[0])}"
    if origin is dict:
        key, value = get_args(hint)
        return f"a dict of {_plural(key)} to {_plural(value) if value is not Any else 'any values'}"
    simple = {float: "a number", int: "an integer", str: "a string", bool: "True or False", Path: "a path"}
    return simple.get(hint, getattr(hint, "__name__", str(hint)))


def _plural(hint: Any) -> str:
    text = describe(hint)
    for article in ("a ", "an "):
        if text.startswith(article):
            noun = text.removeprefix(article)
            return "numbers" if noun == "number" else f"{noun}s" if " " not in noun else noun
    return text


_DESCRIPTIONS = {
    "claude_code_hooks": "a dict of hook event names ('PreToolUse', 'PostToolUse', ...) to lists of HookMatcher",
    "claude_code_add_dirs": "a list of paths (str or Path)",
    "claude_code_plugins": "a list of paths (str or Path)",
    "claude_code_sandbox": "a dict of SandboxSettings (e.g. {'enabled': True})",
}
"""How the settings whose types read badly are described."""


def _check_value(name: str, value: Any) -> None:
    try:
        _adapter(name).validate_python(value, strict=True)
    except ValidationError as error:
        expected = _DESCRIPTIONS.get(name) or describe(_hint(name))
        raise ClaudeCodeSettingsError(
            f"Invalid setting {name}={value!r}: it must be {expected}{_culprit(value, error)}."
        ) from None
    check = SETTINGS[name].check
    problem = check(value) if check is not None else None
    if problem is not None:
        raise ClaudeCodeSettingsError(f"Invalid setting {name}={value!r}: {problem}.")


def _culprit(value: Any, error: ValidationError) -> str:
    """For a list or dict, which item was wrong: `` (the item at ['A'] is not allowed: ...)``."""
    if not isinstance(value, list | dict):
        return ""
    for detail in error.errors():
        loc = detail["loc"]
        item = loc[-1] if loc else None
        inside = item in value if isinstance(value, dict) else isinstance(item, int) and 0 <= item < len(value)
        if inside:
            return f" (the item at [{item!r}] is wrong: {detail['msg']})"
    return ""


_RENAMED_0_0_52 = {"append_system_prompt": "claude_code_system_prompt_append", "working_directory": "claude_code_cwd"}
"""Settings of 0.0.52 whose name changed beyond the prefix (the others are ``claude_code_`` + their old name)."""

_DROPPED_0_0_52 = {
    "continue_conversation": "a run continues exactly the conversation of its message_history "
    "(pass message_history=result.all_messages())",
    "resume": "a run resumes the Claude Code session of its message_history, found or rebuilt by the model "
    "(pass the stored messages as message_history; see docs/history.md)",
}
"""Settings of 0.0.52 that have no equivalent: which conversation a run continues is its ``message_history``."""


def check_settings(settings: Mapping[str, Any] | None) -> None:
    """Raise :class:`ClaudeCodeSettingsError` for an unknown ``claude_code_*`` key, a key of this library without its
    prefix (0.0.52's ``max_turns``, say: silently ignored, it would drop a limit), a setting of 0.0.52 with no
    equivalent (``continue_conversation``, ``resume``), or a value of a wrong type or range.

    ``None`` values count as unset.
    """
    if not settings:
        return
    known = _hints()
    for name, value in settings.items():
        if name in _DROPPED_0_0_52:
            raise ClaudeCodeSettingsError(f"Setting {name!r} of 0.0.52 is not supported: {_DROPPED_0_0_52[name]}.")
        renamed = _RENAMED_0_0_52.get(name, PREFIX + name)
        if not name.startswith(PREFIX) and name not in known and renamed in known:
            raise ClaudeCodeSettingsError(
                f"Unknown setting {name!r}: the setting is called {renamed!r} (the library's settings carry the "
                f"{PREFIX!r} prefix since 0.1)."
            )
        if name.startswith(PREFIX) and name not in known:
            candidates = [key for key in known if key.startswith(PREFIX)]
            close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else f" Known: {', '.join(sorted(candidates))}."
            raise ClaudeCodeSettingsError(f"Unknown setting {name!r}.{hint}")
        if name in known and value is not None:
            _check_value(name, value)


def _is_count(value: Any, *, minimum: int) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def check_model_arguments(limits: ProcessLimits, *, tool_transport: Any, settings: Mapping[str, Any] | None) -> None:
    """Check the constructor arguments of :class:`~claudecode_model.ClaudeCodeModel` (its process limits as given)."""
    keep_sessions, session_idle_timeout = limits.keep_sessions, limits.idle_timeout
    spare_sessions, max_processes = limits.spare_sessions, limits.max_processes
    if keep_sessions is not None and not _is_count(keep_sessions, minimum=0):
        raise ClaudeCodeSettingsError(
            f"Invalid keep_sessions={keep_sessions!r}: it must be an integer, 0 or more (0 keeps no idle CLI process)."
        )
    if (
        isinstance(session_idle_timeout, bool)
        or not isinstance(session_idle_timeout, int | float)
        or not session_idle_timeout > 0
    ):
        raise ClaudeCodeSettingsError(
            f"Invalid session_idle_timeout={session_idle_timeout!r}: it must be a number of seconds greater than 0."
        )
    if tool_transport not in TRANSPORTS:
        raise ClaudeCodeSettingsError(
            f"Invalid tool_transport={tool_transport!r}: it must be one of {', '.join(map(repr, TRANSPORTS))}."
        )
    check_transport_available(tool_transport)
    if settings is not None and not isinstance(settings, Mapping):
        raise ClaudeCodeSettingsError(f"Invalid settings={settings!r}: it must be a dict (ClaudeCodeModelSettings).")
    check_settings(settings)
    if not _is_count(spare_sessions, minimum=0):
        raise ClaudeCodeSettingsError(
            f"Invalid spare_sessions={spare_sessions!r}: it must be an integer, 0 or more (0 starts no spare)."
        )
    if max_processes is not None and not _is_count(max_processes, minimum=1):
        raise ClaudeCodeSettingsError(
            f"Invalid max_processes={max_processes!r}: it must be an integer, 1 or more (or None for the default)."
        )


def check_request_settings(settings: Mapping[str, Any] | None) -> None:
    """Everything checked before a request starts: types and ranges (pydantic-ai warns about the unsupported
    standard settings, see ``UNSUPPORTED_STANDARD_SETTINGS``), and an event loop that can start the CLI."""
    check_settings(settings)
    check_event_loop()


def check_event_loop() -> None:
    """Refuse a running event loop that cannot start subprocesses (on Windows, anything but the Proactor loop)."""
    from claudecode_model._process.platform import event_loop_problem

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    problem = event_loop_problem(loop)
    if problem is not None:
        raise ClaudeCodeSettingsError(f"Cannot run Claude Code here: {problem}.")
