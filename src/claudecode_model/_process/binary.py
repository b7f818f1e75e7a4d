"""The Claude Code CLI binary: where it is (explicit path, bundled with the SDK, ``PATH``) and which version it is.

On Windows the CLI is ``claude.exe`` (bundled, on ``PATH`` or where the native installer puts it): npm's
``claude.cmd`` is a batch script that claude-agent-sdk refuses to run, so it is never chosen.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from claudecode_model._compat import bundled_cli_dir, bundled_cli_version
from claudecode_model._process import platform
from claudecode_model.exceptions import CLINotFoundError

__all__ = [
    "COMMON_LOCATIONS",
    "INSTALL_HINT",
    "TESTED_CLI_VERSIONS",
    "WINDOWS_INSTALL_HINT",
    "WINDOWS_LOCATIONS",
    "bundled_cli_path",
    "cli_version",
    "cli_version_async",
    "cli_version_text",
    "find_cli",
    "log_support",
    "parse_version",
    "support_note",
    "version_text",
]

logger = logging.getLogger(__name__)

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

WINDOWS_LOCATIONS = ("~/.local/bin/claude.exe",)
"""Where Claude Code's native Windows installer puts ``claude.exe``."""

WINDOWS_INSTALL_HINT = (
    "Install the native claude.exe (PowerShell: `irm https://claude.ai/install.ps1 | iex`), or the "
    "claude-agent-sdk wheel for Windows x64 (it bundles claude.exe), or pass `cli_path=` to ClaudeCodeModel. "
    "npm's claude.cmd cannot be used: claude-agent-sdk refuses to run a batch script."
)

_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}

SDK_SERVER_MINIMUM_CLI = (2, 0, 0)
"""The first Claude Code version that serves in-process (``type="sdk"``) MCP servers."""

TESTED_CLI_VERSIONS: tuple[tuple[int, ...], tuple[int, ...]] = ((2, 1, 332), (2, 1, 332))
"""The oldest and newest Claude Code CLI versions the test suite has passed on (the locked suite and the canary).

Raise the newest when ``make test-latest`` passes on a newer CLI; the oldest is the CLI bundled with the lowest
claude-agent-sdk that ``pyproject.toml`` allows.
"""


def version_text(version: tuple[int, ...]) -> str:
    """``(2, 1, 332)`` as ``"2.1.332"``."""
    return ".".join(str(part) for part in version)


def support_note(version: tuple[int, ...] | None) -> str | None:
    """Why a CLI of ``version`` is outside the tested range (``None`` inside it)."""
    oldest, newest = TESTED_CLI_VERSIONS
    versions = version_text(oldest) if oldest == newest else f"{version_text(oldest)} to {version_text(newest)}"
    tested = f"this claudecode-model was tested with Claude Code {versions}"
    if version is None:
        return f"the CLI's version is unknown; {tested}"
    if version < oldest:
        return f"Claude Code {version_text(version)} is older than tested ({tested}); upgrade it if something fails"
    if version > newest:
        return f"Claude Code {version_text(version)} is newer than tested ({tested}); report what fails"
    return None


def log_support(cli_path: Path) -> None:
    """Say at DEBUG which CLI the model runs and whether its version is in the tested range."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    version = cli_version(cli_path)
    note = support_note(version)
    shown = version_text(version) if version is not None else "unknown"
    logger.debug("Claude Code CLI %s, version %s%s", cli_path, shown, f": {note}" if note else " (tested range)")


def bundled_cli_path() -> Path | None:
    """The CLI shipped inside the claude-agent-sdk wheel, if this platform's wheel has one."""
    bundled = bundled_cli_dir() / platform.CLI_BINARY
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
    searched.append(f"claude_agent_sdk/_bundled/{platform.CLI_BINARY}")
    if platform.CLI_BINARY == "claude.exe":
        return _find_windows_cli(searched)
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


def _find_windows_cli(searched: list[str]) -> Path:
    """``claude.exe`` in an absolute ``PATH`` entry (not the working directory), else where the native installer
    puts it; never npm's ``claude.cmd``."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and os.path.isabs(entry) and os.path.isfile(os.path.join(entry, "claude.exe")):
            return Path(entry, "claude.exe")
    searched.append("PATH (claude.exe)")
    for location in WINDOWS_LOCATIONS:
        candidate = Path(location).expanduser()
        searched.append(str(candidate))
        if candidate.is_file():
            return candidate
    raise CLINotFoundError(
        f"Claude Code CLI not found (looked in: {', '.join(searched)}). {WINDOWS_INSTALL_HINT}", searched=searched
    )


def cli_version(cli_path: Path) -> tuple[int, ...] | None:
    """The version of the CLI at ``cli_path`` (``None`` if unknown), cached per binary.

    The bundled CLI's version is known without running it; any other binary is asked with ``--version``.
    """
    try:
        stat = os.stat(cli_path)  # one cheap call; the version is what may take time
    except OSError:
        return None
    return _cached_version(str(cli_path), stat.st_mtime_ns, stat.st_size)


_ASKED_VERSIONS: dict[tuple[str, int, int], tuple[int, ...] | None] = {}
"""Versions :func:`cli_version_async` learned, by binary (path, mtime, size)."""


async def cli_version_async(cli_path: Path) -> tuple[int, ...] | None:
    """:func:`cli_version` without blocking the event loop: a binary other than the bundled one is asked with
    ``--version`` as a subprocess that is killed if the caller is cancelled (or gives no answer in 10 s)."""
    try:
        stat = os.stat(cli_path)  # one cheap call; the version is what may take time
    except OSError:
        return None
    if cli_path.parent == bundled_cli_dir():
        return parse_version(bundled_cli_version())
    key = (str(cli_path), stat.st_mtime_ns, stat.st_size)
    if key in _ASKED_VERSIONS:
        return _ASKED_VERSIONS[key]
    try:
        process = await asyncio.create_subprocess_exec(
            str(cli_path),
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, **_QUIET_ENV},
        )
    except OSError as error:
        logger.debug("could not ask %s for its version: %s", cli_path, error)
        return None
    try:
        async with asyncio.timeout(10):
            stdout, _ = await process.communicate()
    except TimeoutError:
        logger.debug("%s did not tell its version within 10 s", cli_path)
        version = None
    else:
        version = parse_version(stdout.decode(errors="replace"))
    finally:
        if process.returncode is None:  # our own signal: the process's kill() polls it, racing asyncio's watcher
            platform.signal_process(process.pid, force=True)
            await asyncio.shield(process.wait())
    _ASKED_VERSIONS[key] = version
    return version


def cli_version_text(cli_path: Path, *, timeout: float = 30) -> str:
    """What ``claude --version`` prints (for diagnostics), or why it could not be asked."""
    try:
        completed = _run_version(str(cli_path), timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"version unknown: {error}"
    return completed.stdout.strip() or completed.stderr.strip() or f"exit code {completed.returncode}"


def parse_version(text: str) -> tuple[int, ...] | None:
    """The first ``major.minor.patch`` in ``text``."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else None


@cache
def _cached_version(path: str, mtime_ns: int, size: int) -> tuple[int, ...] | None:
    if Path(path).parent == bundled_cli_dir():
        return parse_version(bundled_cli_version())
    try:
        completed = _run_version(path, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        logger.debug("could not ask %s for its version: %s", path, error)
        return None
    return parse_version(completed.stdout)


def _run_version(path: str, *, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [path, "--version"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **_QUIET_ENV},
        check=False,
    )


def _is_executable(path: Path) -> bool:
    """A file that may be run (on Windows any file: it has no execute bit; ``.exe`` is checked by the caller)."""
    return path.is_file() and (platform.NAME == "win32" or os.access(path, os.X_OK))
