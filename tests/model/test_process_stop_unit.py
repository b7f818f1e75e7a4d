"""Stopping a CLI's processes by its tag, and the lifeline that does it when the program dies (no CLI needed)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudecode_model._process.oscalls import CLI_TAG_VARIABLE, own_session_options, stop_child, stop_tagged
from tests._support.polling import until
from tests._support.processes import live_descendants, process_table
from tests._support.subprocesses import SRC_DIR

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finding tagged processes reads /proc")

# A command as the Bash tool starts it: one child in a session of its own, one double-forked (re-parented at once).
ESCAPING = "setsid sleep 301 & (sleep 302 &) ; sleep 303"


def sleepers(marker: str) -> set[int]:
    """Live ``sleep 30x`` processes of this test (their environment names the marker)."""
    found = set()
    for entry in process_table():
        if entry.alive and entry.argv[:1] == ["sleep"] and entry.argv[1:2] in (["301"], ["302"], ["303"]):
            try:
                environ = Path(f"/proc/{entry.pid}/environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in environ:
                found.add(entry.pid)
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    marker = f"marker-{os.getpid()}-{time.monotonic_ns()}"
    yield marker
    for pid in sleepers(marker):
        os.kill(pid, signal.SIGKILL)


def test_stopping_a_tag_stops_commands_that_left_the_tree_and_nothing_else(marker: str):
    mine = {**os.environ, CLI_TAG_VARIABLE: f"{marker}-a", "MARKER": marker}
    other = {**os.environ, CLI_TAG_VARIABLE: f"{marker}-b", "MARKER": marker}
    shells = [subprocess.Popen(["sh", "-c", ESCAPING], env=env, **own_session_options()) for env in (mine, other)]
    try:
        until(lambda: len(sleepers(marker)) == 6, "the commands did not start")
        other_tag = f"{CLI_TAG_VARIABLE}={marker}-b".encode()
        theirs = {pid for pid in sleepers(marker) if other_tag in Path(f"/proc/{pid}/environ").read_bytes()}

        assert stop_tagged([f"{marker}-a"], grace=0.5) == 4  # the shell and its three sleeps
        until(lambda: sleepers(marker) == theirs, "a tagged process outlived the stop")
        assert shells[0].wait(timeout=10) == -signal.SIGTERM
    finally:
        stop_tagged([f"{marker}-a", f"{marker}-b"])
        for shell in shells:
            shell.wait(timeout=10)
    assert sleepers(marker) == set()


PROGRAM = """
import os, subprocess, sys
from claudecode_model._process import lifeline
from claudecode_model._process.oscalls import CLI_TAG_VARIABLE

tag = sys.argv[1]
lifeline.watch(tag)
subprocess.Popen(
    ["sh", "-c", {escaping!r}], env={{**os.environ, CLI_TAG_VARIABLE: tag}}, start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
print("watching", flush=True)
if sys.argv[2] == "release":
    lifeline.release(tag)
sys.stdin.read()  # until the test closes it (or kills this program)
"""


def start_program(marker: str, then: str) -> tuple[subprocess.Popen[str], int]:
    program = subprocess.Popen(
        [sys.executable, "-c", PROGRAM.format(escaping=ESCAPING), f"{marker}-tag", then],
        env={**os.environ, "PYTHONPATH": str(SRC_DIR), "MARKER": marker},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert program.stdout is not None
    assert program.stdout.readline() == "watching\n"
    until(lambda: len(sleepers(marker)) == 3, "the command did not start")
    [watcher] = watchers(marker)
    return program, watcher


def watchers(marker: str) -> list[int]:
    """The lifeline watchers started by programs of this test (they inherit the program's environment)."""
    found = []
    for entry in process_table():
        if entry.alive and any(arg.endswith("posix.py") for arg in entry.argv):
            with contextlib.suppress(OSError):
                if marker.encode() in Path(f"/proc/{entry.pid}/environ").read_bytes():
                    found.append(entry.pid)
    return found


def alive(pid: int) -> bool:
    return any(entry.pid == pid and entry.alive for entry in process_table())


def test_a_killed_program_s_lifeline_stops_its_tagged_processes_and_exits(marker: str):
    program, watcher = start_program(marker, "keep")
    # Nobody's child here, in a session of its own: the terminal's Ctrl-C to the program's group misses it.
    assert watcher not in live_descendants(program.pid)
    assert os.getsid(watcher) not in (os.getsid(program.pid), os.getsid(0))

    program.kill()
    program.wait()
    program.stdin.close()  # type: ignore[union-attr]
    program.stdout.close()  # type: ignore[union-attr]

    until(lambda: sleepers(marker) == set(), "the lifeline did not stop the program's commands")
    until(lambda: not alive(watcher), "the lifeline watcher outlived its program")


def test_a_program_that_ends_takes_its_watcher_along_and_released_tags_are_left_alone(marker: str):
    program, watcher = start_program(marker, "release")

    program.communicate("")  # the program ends normally

    until(lambda: not alive(watcher), "the lifeline watcher outlived its program")
    assert len(sleepers(marker)) == 3  # released: not the watcher's to stop


def test_stop_child_stops_a_child_and_leaves_its_reaping_to_its_owner():
    """Reaping it here would race with asyncio's child watcher, whose own wait then reports 255 with a warning."""
    child = subprocess.Popen(["sleep", "300"], **own_session_options())
    try:
        stop_child(child.pid)

        assert os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None  # exited, unreaped
        assert child.wait(timeout=5) == -signal.SIGTERM  # its owner reads its true status
    finally:
        child.kill()
        child.wait()
