"""The switches this library sets in the CLI's environment so a request does what the agent asked, and no more.

- **Compaction**: off (``DISABLE_COMPACT=1``) unless ``claude_code_compaction=True``: Claude never answers from a
  summary pydantic-ai's history does not hold, and a request over the context window fails with
  ``ClaudeCodeContextWindowExceededError``, as on ``AnthropicModel``.
- **Prompt caching**: pydantic-ai's unified ``cache`` setting (and the ``Caching`` capability): ``False`` turns the
  CLI's caching off (``DISABLE_PROMPT_CACHING=1``), a retention sets its TTL (``CLAUDE_CODE_PROMPT_CACHE_TTL``).
- **Billing**: ``claude_code_auth`` (see :mod:`claudecode_model._process.credentials`).

The user's own ``claude_code_env`` / ``env`` entries win over each switch. Free of the SDK: the early CLI predicts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claudecode_model._process.credentials import AuthMode, auth_env, find_credentials, warn_once
from claudecode_model.exceptions import ClaudeCodeSettingsError

__all__ = ["library_env"]


def library_env(settings: Mapping[str, Any], cache: object, env: Mapping[str, str]) -> dict[str, str]:
    """The entries to add to the CLI's environment ``env`` (the model's and the settings' entries) for a request
    whose settings are ``settings`` and whose resolved ``cache`` setting is ``cache``. Each entry the user set is
    left as it is."""
    auth: AuthMode = settings.get("claude_code_auth", "auto")
    added: dict[str, str] = {}
    if not settings.get("claude_code_compaction", False):
        added["DISABLE_COMPACT"] = "1"
    if cache is False:
        added["DISABLE_PROMPT_CACHING"] = "1"
    elif (ttl := _retention(cache)) is not None:
        added["CLAUDE_CODE_PROMPT_CACHE_TTL"] = ttl
    blanked = auth_env(auth)  # over the user's entries too: the setting says which credential bills
    credentials = find_credentials({**env, **added, **blanked})
    if auth == "api_key" and not credentials.api_keys:
        raise ClaudeCodeSettingsError(
            "claude_code_auth='api_key' needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the environment "
            "(this process's, the model's env or claude_code_env); none is set."
        )
    if auth == "auto":
        warn_once(credentials)
    return {**{name: value for name, value in added.items() if name not in env}, **blanked}


def _retention(cache: object) -> str | None:
    """The CLI's TTL (``5m`` or ``1h``) for a resolved ``cache`` setting, or ``None`` for its default."""
    retention = cache.get("retention") if isinstance(cache, Mapping) else cache
    if retention in ("5m", "1h"):
        return str(retention)
    return None
