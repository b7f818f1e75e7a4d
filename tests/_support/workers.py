"""Worker processes of the crash scenarios: each in a process group of its own, its output in a log file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests._support.polling import wait_until
from tests._support.processes import process_table

if TYPE_CHECKING:
    from pathlib import Path

    from claudecode_model.testing import RecordedRequest

Ledger = list[tuple[str, str, int]]
"""The tool runs a scenario's ledger recorded: (tool, worker, input), in order."""


def spawn_worker(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Run this interpreter with ``args``, its output appended to ``log``, in a process group of its own (so that
    SIGKILL to the group takes its CLI along)."""
    with open(log, "ab") as output:
        return subprocess.Popen(
            [sys.executable, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )


def kill_worker(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of ``process`` if it still runs, and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def finish_worker(process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Wait for ``process`` to exit with 0 (killing its group after ``timeout``); fail with the end of ``log``."""
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_worker(process)
        raise AssertionError(f"timed out:\n{log.read_text()[-4000:]}") from None
    assert code == 0, f"exited with {code}:\n{log.read_text()[-4000:]}"


def survivors_of(process: subprocess.Popen[bytes]) -> list[int]:
    """The live processes left in the group ``process`` led, once none are left or 10 s have passed."""

    def members() -> list[int]:
        return [entry.pid for entry in process_table() if entry.alive and entry.pgid == process.pid]

    wait_until(lambda: not members(), timeout=10)
    return members()


@dataclass
class CrashScenario:
    """What a crash scenario observed: worker A killed after two of the chain's three tools, the run finished by
    another worker, and a follow-up turn on a worker that had not run the conversation."""

    ledger_when_killed: Ledger
    survivors_of_a: list[int]
    finished: dict[str, Any]
    followed: dict[str, Any]
    follow_up_request: RecordedRequest
    follow_up_transcripts: list[Path]
    ledger: Ledger
