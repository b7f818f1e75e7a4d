"""Which credential a CLI process bills, said out loud; an inherited API key kept away on request.

Claude Code bills an API key in its environment (``ANTHROPIC_API_KEY``, sent as ``x-api-key``; or
``ANTHROPIC_AUTH_TOKEN``, a Bearer token) before the subscription login in its config dir. With both present, a run
bills the key, which a user who logged in does not expect: a one-time WARNING says so. ``claude_code_auth=
"subscription"`` blanks the inherited variables for the CLI (the CLI treats an empty one as unset), so the login
bills; ``"api_key"`` requires a key.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "API_KEY_VARIABLES",
    "AuthMode",
    "Credentials",
    "auth_env",
    "cli_login_method",
    "find_credentials",
    "warn_once",
]

logger = logging.getLogger(__name__)

AuthMode = Literal["auto", "subscription", "api_key"]

API_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""The environment variables whose key Claude Code bills before a login."""

_warned: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class Credentials:
    """The credentials a CLI with a given environment finds."""

    api_keys: tuple[str, ...]
    """The variables of :data:`API_KEY_VARIABLES` set (not empty) in its environment."""
    login: Path | None
    """The subscription login's credentials file in its config dir, if there is one."""

    def billed(self) -> str:
        """What a run bills: the first key variable, else the login (``"none"`` when neither is found)."""
        if self.api_keys:
            return self.api_keys[0]
        return f"the subscription login ({self.login})" if self.login is not None else "none"


def find_credentials(env: Mapping[str, str]) -> Credentials:
    """The credentials of a CLI whose environment is ``env`` (this process's environment, then the CLI's own)."""
    merged = {**os.environ, **env}
    keys = tuple(name for name in API_KEY_VARIABLES if merged.get(name))
    config_dir = Path(merged.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    login = config_dir / ".credentials.json"
    return Credentials(keys, login if login.is_file() else None)


def cli_login_method(cli_path: Path, *, timeout: float = 30) -> str | None:
    """How the CLI at ``cli_path`` is logged in, as ``claude auth status`` reports it (``"claude.ai"``, ...):
    what finds a login kept outside ``.credentials.json`` (the macOS Keychain). ``None``: not logged in, or the CLI
    could not tell."""
    try:
        completed = subprocess.run(
            [str(cli_path), "auth", "status"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"},
            check=False,
        )
        status = json.loads(completed.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        logger.debug("could not ask %s for its login: %s", cli_path, error)
        return None
    if not isinstance(status, dict) or status.get("loggedIn") is not True:
        return None
    method = status.get("authMethod")
    return method if isinstance(method, str) and method else "unknown method"


def auth_env(mode: AuthMode) -> dict[str, str]:
    """The environment entries ``claude_code_auth`` adds: blank key variables for ``"subscription"``."""
    return dict.fromkeys(API_KEY_VARIABLES, "") if mode == "subscription" else {}


def warn_once(credentials: Credentials) -> None:
    """Log a WARNING, once per combination in this process, when both a key and a login are found."""
    if not credentials.api_keys or credentials.login is None:
        return
    key = (*credentials.api_keys, str(credentials.login))
    if key in _warned:
        return
    _warned.add(key)
    logger.warning(
        "Claude Code will bill %s, not the subscription login in %s: both are present and the CLI prefers the "
        "key. Set claude_code_auth='subscription' to keep the key away from the CLI, or 'api_key' to silence this.",
        credentials.api_keys[0],
        credentials.login,
    )
