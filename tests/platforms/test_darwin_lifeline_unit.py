"""The macOS lifeline (``groups`` mode, simulated on Linux) holds a copy of each CLI's input: a killed program's CLI
is killed before it can see the end of its input (also by a watcher started again), a graceful end of input still
reaches it, and the watcher keeps no copy of a CLI that ended (no CLI needed: a shell that records when its input
ends stands in for it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claudecode_model._process.platform.posix import _Watcher
from tests._support.platforms import command_as
from tests._support.polling import until
from tests._support.processes import environment, is_alive, process_table
from tests._support.subprocesses import SRC_DIR

# The stand-in CLI: reads one line (then says it runs), then waits for the end of its input and records it.
CLI = 'read -r line; : > "$0.ready"; read -r line; : > "$0.eof"; sleep 600'

PROGRAM = """
import os, signal, subprocess, sys, time
from claudecode_model._process import lifeline

base, tag, then = sys.argv[1:4]
assert lifeline.HOLDS_INPUT
lifeline.watch(tag)
cli = subprocess.Popen(["sh", "-c", {cli!r}, base], stdin=subprocess.PIPE, start_new_session=True)
lifeline.started(tag, cli.pid, cli.stdin.fileno())
cli.stdin.write(b"go\\n")
cli.stdin.flush()
while not os.path.exists(base + ".ready"):
    time.sleep(0.01)
print(cli.pid, os.fstat(cli.stdin.fileno()).st_ino, flush=True)
if then == "end":  # a graceful end of input, as the transport does it
    lifeline.input_ended(tag)
    cli.stdin.close()
elif then == "release":  # the CLI is killed and the session releases its tag
    os.killpg(cli.pid, signal.SIGKILL)
    cli.wait()
    lifeline.release(tag)
print("done", flush=True)
if then == "restart":  # the test killed the watcher: the next message starts another one
    sys.stdin.readline()
    lifeline.watch(tag + "-next")
    print("restarted", flush=True)
time.sleep(600)
"""


def group_watchers(marker: str) -> list[int]:
    """The lifeline watchers in ``groups`` mode started by this test's programs (they inherit its environment)."""
    return [
        entry.pid
        for entry in process_table()
        if entry.alive and entry.argv[-1:] == ["groups"] and f"MARKER={marker}".encode() in environment(entry.pid)
    ]


def input_copies(watcher: int, inode: int) -> int:
    """How many of ``watcher``'s file descriptors are the pipe ``inode`` (a CLI's input)."""
    count = 0
    for fd in Path(f"/proc/{watcher}/fd").iterdir():
        try:
            count += os.readlink(fd) == f"pipe:[{inode}]"
        except OSError:
            continue
    return count


class Program:
    def __init__(self, base: Path, marker: str, then: str) -> None:
        self.base = base
        self.process = subprocess.Popen(
            [sys.executable, *command_as("darwin", PROGRAM.format(cli=CLI)), str(base), f"{marker}-tag", then],
            env={**os.environ, "PYTHONPATH": str(SRC_DIR), "MARKER": marker},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        pid, inode = self.process.stdout.readline().split()
        self.cli = int(pid)
        self.inode = int(inode)
        assert self.process.stdout.readline() == "done\n"
        until(lambda: len(group_watchers(marker)) == 1, "no lifeline watcher in groups mode runs")
        [self.watcher] = group_watchers(marker)

    @property
    def saw_end_of_input(self) -> bool:
        return Path(f"{self.base}.eof").exists()

    def killed(self, by: str) -> None:
        """SIGKILL the program, and check that ``by`` (its watcher) killed its CLI before the CLI saw end of input."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        until(lambda: not is_alive(self.cli), f"{by} did not kill the CLI")
        assert not self.saw_end_of_input, "the CLI saw the end of its input before it was killed"

    def stop(self) -> None:
        if is_alive(self.cli):
            os.killpg(self.cli, signal.SIGKILL)
        self.process.kill()
        self.process.communicate()


@pytest.fixture
def marker() -> str:
    return f"lifeline-{os.getpid()}-{time.monotonic_ns()}"


@pytest.mark.parametrize("round_", range(3))
def test_a_killed_program_s_cli_is_killed_before_it_sees_the_end_of_its_input(tmp_path, marker: str, round_: int):
    program = Program(tmp_path / "cli", marker, "keep")
    try:
        until(lambda: input_copies(program.watcher, program.inode) == 1, "the watcher holds no copy of the input")

        program.killed(by="the lifeline")

        until(lambda: not is_alive(program.watcher), "the lifeline watcher outlived its program")
    finally:
        program.stop()


def test_a_watcher_started_again_gets_the_input_copies_and_still_kills_first(tmp_path, marker: str):
    program = Program(tmp_path / "cli", marker, "restart")
    try:
        until(lambda: input_copies(program.watcher, program.inode) == 1, "the watcher holds no copy of the input")
        os.kill(program.watcher, signal.SIGKILL)
        until(lambda: not group_watchers(marker), "the killed watcher is still there")
        assert program.process.stdin is not None
        assert program.process.stdout is not None
        program.process.stdin.write("go on\n")
        program.process.stdin.flush()
        assert program.process.stdout.readline() == "restarted\n"
        until(lambda: len(group_watchers(marker)) == 1, "no watcher was started again")
        [watcher] = group_watchers(marker)
        until(lambda: input_copies(watcher, program.inode) == 1, "the new watcher holds no copy of the input")

        program.killed(by="the new watcher")
    finally:
        program.stop()


def test_a_graceful_end_of_input_reaches_the_cli_and_the_watcher_drops_its_copy(tmp_path, marker: str):
    program = Program(tmp_path / "cli", marker, "end")
    try:
        until(lambda: program.saw_end_of_input, "the CLI never got the end of its input")
        assert input_copies(program.watcher, program.inode) == 0
        assert is_alive(program.watcher)  # the tag is still registered
    finally:
        program.stop()


def test_the_watcher_drops_the_input_copy_of_a_released_cli(tmp_path, marker: str):
    program = Program(tmp_path / "cli", marker, "release")
    try:
        until(lambda: input_copies(program.watcher, program.inode) == 0, "the watcher kept a released CLI's input")
    finally:
        program.stop()


def test_the_watcher_pairs_each_input_copy_with_its_line_and_closes_what_it_does_not_keep():
    def is_open(fd: int) -> bool:
        try:
            os.fstat(fd)
        except OSError:
            return False
        return True

    pipes = [os.pipe() for _ in range(3)]
    try:
        watcher = _Watcher()
        watcher.feed(b"+a\n+b\n=a 101\n")
        watcher.received([pipes[0][1], pipes[1][1]])
        watcher.feed(b">a\n>unknown\n")  # the second fd belongs to no registered tag: closed
        watcher.received([pipes[2][1]])
        watcher.feed(b"=b 102\n>b\n<a\n")  # the end of a's input: its copy closed

        assert watcher.leaders() == [101, 102]
        assert watcher.inputs == {"b": pipes[2][1]}
        assert [is_open(pipe[1]) for pipe in pipes] == [False, False, True]

        watcher.feed(b"-b\n")
        assert watcher.inputs == {}
        assert not is_open(pipes[2][1])
    finally:
        for read_fd, write_fd in pipes:
            os.close(read_fd)
            if is_open(write_fd):
                os.close(write_fd)
