"""A session's close ends its CLI and closes the pipes the SDK left open without taking the exit from asyncio's
child watcher (a plain ``sleep`` stands in for the CLI; no CLI needed).

A close that polls a process which has just died may reap it before the watcher does; the watcher then logs
"Unknown child process pid N, will report returncode 255" (seen in CI at a program's exit). The watcher is made
slow here so that a close which does not wait for its report loses that race every time.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

import anyio
import pytest

from claudecode_model._compat import close_process_pipes
from claudecode_model._process.oscalls import process_exited
from claudecode_model._sessions.session import _ended_and_reported

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX child watcher and signals")

WATCHER_DELAY = 0.05


@pytest.fixture
def slow_watcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every blocking ``waitpid`` (asyncio's child watcher's; a close polls with ``WNOHANG``) starts late."""
    waitpid = os.waitpid

    def late_waitpid(pid: int, options: int) -> tuple[int, int]:
        if not options & os.WNOHANG:
            time.sleep(WATCHER_DELAY)
        return waitpid(pid, options)

    monkeypatch.setattr(os, "waitpid", late_waitpid)


async def test_a_running_process_is_killed_and_its_exit_reported_before_its_pipes_close(
    slow_watcher: None, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="asyncio")
    process = await anyio.open_process(["sleep", "30"])

    await _ended_and_reported(process)
    assert process.returncode == -signal.SIGKILL
    close_process_pipes(process)

    assert process._process._transport.get_pipe_transport(1).is_closing()  # type: ignore[attr-defined]
    await anyio.sleep(2 * WATCHER_DELAY)
    assert [record.getMessage() for record in caplog.records] == []


async def test_processes_that_just_died_are_left_to_the_watcher_to_reap(
    slow_watcher: None, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="asyncio")
    processes = []
    for _ in range(5):
        process = await anyio.open_process(["sleep", "30"])
        os.kill(process.pid, signal.SIGKILL)
        while not process_exited(process.pid):  # dead, and not reaped yet: the watcher is still asleep
            time.sleep(0.001)

        await _ended_and_reported(process)
        close_process_pipes(process)
        processes.append(process)

    await anyio.sleep(2 * WATCHER_DELAY)
    assert [record.getMessage() for record in caplog.records] == []
    assert [process.returncode for process in processes] == [-signal.SIGKILL] * 5
