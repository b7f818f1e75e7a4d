"""Finding the Claude Code CLI binary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from claudecode_model.exceptions import CLINotFoundError

INSTALL_HINT = (
    "Install it with `pip install claude-agent-sdk` (its wheel bundles the CLI), or "
    "`npm install -g @anthropic-ai/claude-code`, or pass `cli_path=` to ClaudeCodeModel."
)

COMMON_LOCATIONS = (
    "~/.npm-global/bin/claude",
    "/usr/local/bin/claude",
    "~/.local/bin/claude",
    "~/node_modules/.bin/claude",
    "~/.yarn/bin/claude",
    "~/.claude/local/claude",
)


def bundled_cli_path() -> Path | None:
    """The CLI shipped inside the claude-agent-sdk wheel, if this platform's wheel has one."""
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return bundled if _is_executable(bundled) else None


def find_cli(cli_path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the CLI: explicit path, then the bundled binary, then PATH, then common install locations."""
    searched: list[str] = []
    if cli_path is not None:
        explicit = Path(cli_path).expanduser()
        if _is_executable(explicit):
            return explicit
        if explicit.is_file():
            raise CLINotFoundError(
                f"The cli_path {str(explicit)!r} exists but is not executable; make it executable "
                f"(chmod +x {str(explicit)!r}) or pass the path of the claude binary.",
                searched=[str(explicit)],
            )
        raise CLINotFoundError(
            f"Claude Code CLI not found at the given cli_path {str(explicit)!r}. {INSTALL_HINT}",
            searched=[str(explicit)],
        )
    bundled = bundled_cli_path()
    if bundled is not None:
        return bundled
    searched.append("claude_agent_sdk/_bundled/claude")
    on_path = shutil.which("claude")
    if on_path:
        return Path(on_path)
    searched.append("PATH")
    for location in COMMON_LOCATIONS:
        candidate = Path(location).expanduser()
        searched.append(str(candidate))
        if _is_executable(candidate):
            return candidate
    raise CLINotFoundError(
        f"Claude Code CLI not found (looked in: {', '.join(searched)}). {INSTALL_HINT}", searched=searched
    )


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
