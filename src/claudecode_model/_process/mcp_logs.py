"""The CLI's MCP log files of a CLI process, removed once it is gone.

Claude Code writes one log file per process and MCP server into the user's cache
(``<cache>/claude-cli-nodejs/<working directory as a key>/mcp-logs-<server>/<start time>.jsonl``, written as the
process ends) and leaves it there: a program that starts many CLIs fills the cache. Each record of such a file names
the Claude Code session it was written for, so the files of a CLI process are told apart from those of other programs
sharing the cache: a file written since the process started whose first record belongs to one of the sessions it
served is its own.

The cache is where the CLI puts it: ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows, else
``$XDG_CACHE_HOME`` or ``~/.cache``. A working directory longer than the CLI's 200-character key is hashed by the
CLI in a way not reproduced here: its files are left.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

__all__ = ["remove_mcp_logs"]

logger = logging.getLogger(__name__)

_KEY_LENGTH = 200
"""The longest working directory key the CLI uses as it is (it hashes longer ones)."""


def remove_mcp_logs(env: Mapping[str, str], cwd: str, sessions: Collection[str], since: float) -> int:
    """Remove the MCP log files that a CLI process started at ``since`` (epoch seconds) in ``cwd`` with the
    environment ``env`` wrote for ``sessions``; how many were removed."""
    if not sessions:
        return 0
    folder = _logs_folder(env, cwd)
    if folder is None:
        return 0
    removed = 0
    for path in folder.glob("mcp-logs-*/*.jsonl"):
        try:
            if path.stat().st_mtime < since or _session_of(path) not in sessions:
                continue
            path.unlink()
        except OSError:
            continue
        removed += 1
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when it is empty
            folder.rmdir()
    if removed:
        logger.debug("removed %d MCP log file(s) of sessions %s", removed, sorted(sessions))
    return removed


def _logs_folder(env: Mapping[str, str], cwd: str) -> Path | None:
    key = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(key) > _KEY_LENGTH:
        return None
    return _cache_root(env) / key


def _cache_root(env: Mapping[str, str]) -> Path:
    merged = {**os.environ, **env}
    home = Path(merged.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "claude-cli-nodejs"
    if sys.platform == "win32":
        local = merged.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(local) / "claude-cli-nodejs" / "Cache"
    return Path(merged.get("XDG_CACHE_HOME") or home / ".cache") / "claude-cli-nodejs"


def _session_of(path: Path) -> str | None:
    """The session the first record of a log file names."""
    with path.open("rb") as file:
        first = file.readline(64 * 1024)
    try:
        record = json.loads(first)
    except ValueError:
        return None
    session = record.get("sessionId") if isinstance(record, dict) else None
    return session if isinstance(session, str) else None
