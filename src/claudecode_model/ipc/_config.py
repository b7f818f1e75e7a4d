"""The claude-agent-sdk server config that makes the Claude Code CLI start the bridge for a session."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from claudecode_model.ipc._constants import BRIDGE_MODULE, SECRET_ENV_VAR, TOOL_USE_ID_META_KEY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from claude_agent_sdk.types import McpStdioServerConfig

    from claudecode_model.ipc._session import IPCSession

__all__ = ["bridge_environment", "stdio_server_config", "tool_use_id"]

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``claudecode_model`` package this process runs."""


def bridge_environment(session: IPCSession, *, include_secret: bool = True) -> dict[str, str]:
    """Environment variables the bridge needs: the session secret, and an import path to this very package.

    ``PYTHONPATH`` starts with the directory this ``claudecode_model`` was imported from, so the bridge runs
    the same code as the parent whatever the CLI's working directory; ``PYTHONSAFEPATH`` keeps that working
    directory off ``sys.path``. ``include_secret=False`` leaves the secret out, for a bridge that inherits it.
    """
    inherited = os.environ.get("PYTHONPATH")
    python_path = _PACKAGE_ROOT if not inherited else os.pathsep.join([_PACKAGE_ROOT, inherited])
    environment = {"PYTHONPATH": python_path, "PYTHONSAFEPATH": "1"}
    if include_secret:
        environment[SECRET_ENV_VAR] = session.secret
    return environment


def stdio_server_config(session: IPCSession, *, include_secret: bool = True) -> McpStdioServerConfig:
    """The stdio MCP server config that starts the bridge of a started ``session`` with ``sys.executable``.

    Use it as a value of ``ClaudeAgentOptions.mcp_servers``. The secret travels in ``env``, not in the
    bridge's arguments. The SDK passes server configs on the CLI's command line, which other users can read in
    ``/proc``: with ``include_secret=False`` the config leaves the secret out, and the caller puts
    ``SECRET_ENV_VAR`` in the CLI's own environment instead (the bridge inherits it).
    """
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", BRIDGE_MODULE, str(session.socket_path), str(session.schema_path)],
        "env": bridge_environment(session, include_secret=include_secret),
    }


def tool_use_id(meta: Mapping[str, object]) -> str | None:
    """The Anthropic ``tool_use`` id in the ``_meta`` of a call (what a ``MetaToolHandler`` receives), if
    any."""
    value = meta.get(TOOL_USE_ID_META_KEY)
    return value if isinstance(value, str) else None
