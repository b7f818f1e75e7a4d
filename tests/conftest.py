"""Project-wide test guards (no test may leave a child process or an IPC file behind) and the shared CLI model."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import tempfile
import time
import warnings
from typing import TYPE_CHECKING

import pytest

from tests._support.platforms import linux_only_reason
from tests._support.processes import live_descendants

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from claudecode_model import ClaudeCodeModel
    from claudecode_model.testing import OfflineBackend

# A private temp dir for the whole test session (short, because socket paths must stay under 108 bytes), so
# the leak guard below sees only this session's files, not those of another process on the machine.
_SESSION_TMP = tempfile.mkdtemp(prefix="cct-", dir="/tmp" if os.path.isdir("/tmp") else None)
os.chmod(_SESSION_TMP, 0o711)  # traversable, as /tmp is, for the tests that connect as another user
os.environ["TMPDIR"] = _SESSION_TMP
tempfile.tempdir = _SESSION_TMP

# Loaded after the lines above (cli_guard imports the package): an unmarked test that starts the CLI fails, and under
# xdist the modules that play one scenario for all their tests run on one worker.
pytest_plugins = ["pytester", "tests._support.cli_guard", "tests._support.worker_groups"]


@functools.cache
def _linux_only(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as module:
            return linux_only_reason(module.read())
    except OSError:
        return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Elsewhere than Linux (a Mac), skip the tests of modules that read ``/proc`` or need Linux namespaces, saying
    why (see docs/testing.md, "Running the suite on a Mac")."""
    if sys.platform.startswith("linux"):
        return
    for item in items:
        reason = _linux_only(str(item.path))
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    shutil.rmtree(_SESSION_TMP, ignore_errors=True)


def _ipc_files() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("claudecode_ipc_")}


@pytest.fixture(autouse=True)
def _nothing_leaks() -> Iterator[None]:
    """Fail a test that leaves child processes or ``claudecode_ipc_*`` files behind."""
    processes_before = live_descendants(os.getpid())
    files_before = _ipc_files()
    yield
    deadline = time.monotonic() + 10
    left = live_descendants(os.getpid()) - processes_before
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = live_descendants(os.getpid()) - processes_before
    assert not left, f"child processes left behind: {sorted(left)}"
    assert not (_ipc_files() - files_before), f"IPC files left behind: {sorted(_ipc_files() - files_before)}"


@pytest.fixture
def run_sync_loop() -> Iterator[None]:
    """For a test that calls ``run_sync()`` here: pydantic-ai leaves the event loop it ran on set for the thread,
    open; it is closed after the test (else whichever later test collects it fails with an unclosed-loop warning)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = asyncio.get_event_loop_policy().get_event_loop()
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    """A ``ClaudeCodeModel`` whose CLI talks to ``claude_backend``, closed after the test."""
    from claudecode_model import ClaudeCodeModel  # imported late: the temp dir above is set first

    # No spares: many tests count the CLI processes a run leaves (tests/model/test_spares_cli.py covers spares).
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    yield model
    await model.aclose()
