"""A pytest plugin: a test that starts the Claude Code CLI without the ``cli`` marker fails, naming the marker.

A Python audit hook on ``subprocess.Popen`` (which ``anyio.open_process`` and asyncio's subprocesses go through) sees
every start of an executable named ``claude`` (the SDK's bundled binary, an npm install, a ``cli_path=`` copy) or
``claude-<hash>`` (the launcher the package starts the CLI through on Linux, ``_process/platform/linux_launcher.py``):
exactly, however short the CLI lives, at the cost of a name check per child process. A version query (``claude -v``) is
not a CLI start. It sees the CLIs this process starts (the package's, the raw SDK's, a test's own); a CLI started by a
child interpreter (a script the test runs) is that child's, and not seen here.

``tests/conftest.py`` loads it; a ``pytester`` run loads it with ``-p tests._support.cli_guard``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

MARKER = "cli"
CLI_NAME = "claude"
"""The CLI's executable name (the SDK's bundled binary, an npm install, a ``cli_path=`` copy)."""
LAUNCHER_PREFIX = f"{CLI_NAME}-"
"""The name of the launcher the package starts the CLI through on Linux (``claude-<hash>``, see
``_process/platform/linux_launcher.py``)."""

VERSION_QUERIES = (["-v"], ["--version"])

_started: list[str] = []
"""The CLIs this process started, in order (only ever appended to)."""


def _on_audit_event(event: str, args: tuple[Any, ...]) -> None:
    if event != "subprocess.Popen":
        return
    _, argv, _, _ = args  # executable, args, cwd, env
    if isinstance(argv, str | bytes | os.PathLike):
        argv = [argv]
    if not argv or not isinstance(argv[0], str | bytes | os.PathLike):
        return
    name = os.path.basename(os.fsdecode(argv[0]))
    if (name == CLI_NAME or name.startswith(LAUNCHER_PREFIX)) and list(argv[1:]) not in VERSION_QUERIES:
        _started.append(os.fsdecode(argv[0]))


# Installed once, when the module is first imported (an audit hook cannot be removed).
sys.addaudithook(_on_audit_event)


def cli_starts() -> int:
    """How many CLIs this process has started so far."""
    return len(_started)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: end-to-end test that starts the real Claude Code CLI against the offline backend"
    )


@pytest.fixture(autouse=True)
def _cli_only_with_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test without the ``cli`` marker that started the CLI (in its function-scoped fixtures or its body)."""
    before = cli_starts()
    yield
    started = cli_starts() - before
    if started and request.node.get_closest_marker(MARKER) is None:
        pytest.fail(
            f"{request.node.nodeid} started the Claude Code CLI {started} time(s) but has no `{MARKER}` marker: "
            f"mark it `@pytest.mark.{MARKER}` (or its module `pytestmark = pytest.mark.{MARKER}`), so that "
            f'`make test-fast` (-m "not {MARKER}") leaves it out',
            pytrace=False,
        )
