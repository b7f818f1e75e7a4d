"""The inactivity bound of a turn (``claude_code_inactivity_timeout``) and the CLI's own API timeouts below it.

The CLI waits silently at most this long within one API attempt (CLI 2.1.332, read from its code and measured
against the offline backend): its stream watchdog gives up on a stream that sent no event for 300 s (it cannot be
set lower), its byte watchdog on a connection that sent no byte for 180 s (300 s for a custom base URL), and
``API_TIMEOUT_MS`` (600 s by default) bounds the wait for a response's headers (a whole non-streamed response). Each
of those ends the attempt with an ``api_retry`` message (or the turn's error), which counts as activity. The default
bound is therefore the stream watchdog plus a margin, and ``API_TIMEOUT_MS`` is set to the margin below the bound, so
that every attempt the CLI itself gives up on ends (and is retried visibly) before the bound fires.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = [
    "CLI_MIN_TIMEOUT_SECONDS",
    "CLI_STREAM_IDLE_SECONDS",
    "DEFAULT_INACTIVITY_TIMEOUT",
    "INACTIVITY_MARGIN_SECONDS",
    "cli_attempt_timeout",
    "cli_timeout_env",
    "inactivity_timeout",
]

CLI_STREAM_IDLE_SECONDS = 300.0
"""The CLI's stream watchdog: a stream with no event for this long is abandoned and retried (its minimum)."""
INACTIVITY_MARGIN_SECONDS = 60.0
"""How much earlier than the bound the CLI's own per-attempt timeouts end an attempt."""
DEFAULT_INACTIVITY_TIMEOUT = CLI_STREAM_IDLE_SECONDS + INACTIVITY_MARGIN_SECONDS
"""The default bound: 360 s."""
CLI_MIN_TIMEOUT_SECONDS = 10.0
"""The shortest per-attempt timeout the CLI accepts (it raises shorter ones to this)."""

_API_TIMEOUT = "API_TIMEOUT_MS"
_FIRST_BYTE = "CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS"
_BYTE_IDLE = "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"


def inactivity_timeout(settings: ClaudeCodeModelSettings | Mapping[str, Any]) -> float | None:
    """The request's inactivity bound in seconds (``None``: off)."""
    if "claude_code_inactivity_timeout" not in settings:
        return DEFAULT_INACTIVITY_TIMEOUT
    value = settings["claude_code_inactivity_timeout"]
    return None if value is None else float(value)


def cli_attempt_timeout(bound: float) -> float:
    """The per-attempt timeout the CLI gets under an inactivity bound of ``bound`` seconds (never below the CLI's
    minimum, so a bound under about 12 s fires before the CLI gives up on an attempt)."""
    return max(CLI_MIN_TIMEOUT_SECONDS, bound - min(INACTIVITY_MARGIN_SECONDS, bound / 6))


def cli_timeout_env(settings: ClaudeCodeModelSettings | Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """The CLI's API timeouts for the request's inactivity bound, for the options' ``env`` (those the user set in
    ``env`` or the process environment are left alone; nothing with the bound off).

    ``API_TIMEOUT_MS`` always; the first-byte and byte-idle windows only when they must be shorter than the CLI's
    defaults (a bound under 360 s).
    """
    bound = inactivity_timeout(settings)
    if bound is None:
        return {}
    attempt = cli_attempt_timeout(bound)
    names = [_API_TIMEOUT]
    if attempt < CLI_STREAM_IDLE_SECONDS:
        names += [_FIRST_BYTE, _BYTE_IDLE]
    chosen = {name.upper() for name in (*env, *os.environ)}
    return {name: str(int(attempt * 1000)) for name in names if name not in chosen}
