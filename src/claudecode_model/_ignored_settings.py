"""Settings a request sets that Claude Code cannot honour: each one warned about, never silently dropped.

pydantic-ai warns (``UnsupportedSettingWarning``) about the standard settings of ``unsupported_settings`` that change
what a request guarantees (``stop_sequences``, ...) and drops the tuning knobs (``temperature``, ...) silently, so that
one set of settings runs on every model. This library promises never to drop a setting unsaid: it warns about the
knobs too, about ``AnthropicModel``'s own ``anthropic_*`` settings (naming the setting that does the job here, if
any), and about the parts of the unified ``cache`` setting the CLI cannot apply. Each setting warns once per model.
See ``docs/settings-parity.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from pydantic_ai.exceptions import UnsupportedSettingWarning

from claudecode_model._compat import guarantee_settings
from claudecode_model._settings_check import UNSUPPORTED_STANDARD_SETTINGS

__all__ = ["ANTHROPIC_EQUIVALENTS", "IgnoredSettings"]

ANTHROPIC_EQUIVALENTS: dict[str, str] = {
    "anthropic_thinking": "Use `thinking` or `claude_code_thinking`.",
    "anthropic_effort": "Use `thinking` or `claude_code_effort`.",
    "anthropic_betas": "Use `claude_code_betas`.",
    "anthropic_task_budget": "Use `claude_code_task_budget`.",
    "anthropic_cache": "Use the unified `cache` setting (caching off, or a TTL).",
    "anthropic_cache_instructions": "Use the unified `cache` setting (caching off, or a TTL).",
    "anthropic_cache_tool_definitions": "Use the unified `cache` setting (caching off, or a TTL).",
    "anthropic_cache_messages": "Use the unified `cache` setting (caching off, or a TTL).",
    "anthropic_context_management": "Claude Code manages the context itself; see `claude_code_compaction`.",
}
"""``AnthropicModelSettings`` keys with a counterpart here, and the hint their warning carries."""


class IgnoredSettings:
    """Warns about each setting a model cannot honour, once per model."""

    def __init__(self) -> None:
        self._warned: set[str] = set()

    def warn(self, model_id: str, settings: Mapping[str, Any] | None, cache: object) -> None:
        """Warn about the settings of a prepared request (``cache``: pydantic-ai's resolved ``params.cache``)."""
        reasons = {name: reason for name in settings or {} if (reason := _reason(name)) is not None}
        if isinstance(cache, Mapping) and cache.get("messages") is False:
            reasons["cache"] = (
                "Claude Code always caches the conversation with the prompt: `messages=False` cannot be applied."
            )
        for name, reason in reasons.items():
            if name in self._warned:
                continue
            self._warned.add(name)
            warnings.warn(
                f"The `{name}` setting is not supported by model {model_id!r} and will be ignored. {reason}",
                UnsupportedSettingWarning,
                stacklevel=4,
            )


_NO_EQUIVALENT = "It is an AnthropicModel setting; the Claude Code CLI has no equivalent."


def _reason(name: str) -> str | None:
    if name in UNSUPPORTED_STANDARD_SETTINGS and name not in guarantee_settings():
        return "The Claude Code CLI has no way to pass it on."  # pydantic-ai warns about the others itself
    if name.startswith("anthropic_"):
        return ANTHROPIC_EQUIVALENTS.get(
            name, "It is an AnthropicModel setting the Claude Code CLI has no equivalent of."
        )
    return None
