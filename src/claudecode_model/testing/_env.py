"""The environment that points the Claude Code CLI at a local backend and keeps it quiet."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DUMMY_API_KEY", "quiet_cli_env"]

DUMMY_API_KEY = "sk-ant-offline-backend-dummy-key"
"""The API key the CLI sends to the offline backend (any string works; the backend ignores it)."""


def quiet_cli_env(
    base_url: str, config_dir: str | Path, tmp_dir: str | Path, *, model: str | None = None
) -> dict[str, str]:
    """Environment variables that point the CLI at ``base_url`` with all non-essential traffic off.

    ``config_dir`` becomes ``CLAUDE_CONFIG_DIR`` (sessions and settings stay out of ``~/.claude``) and
    ``tmp_dir`` becomes ``CLAUDE_CODE_TMPDIR`` (the CLI's temp litter stays contained). Both must exist.
    ``model``, if given, becomes ``ANTHROPIC_MODEL``: the model the CLI uses when none is named.
    """
    return {
        **({"ANTHROPIC_MODEL": model} if model else {}),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "ENABLE_TOOL_SEARCH": "false",
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_TMPDIR": str(tmp_dir),
    }
