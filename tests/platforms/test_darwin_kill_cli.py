"""Under the macOS branch (``sys.platform == "darwin"`` from before the library is imported; the kernel is Linux): a
program SIGKILLed while a tool call is parked, or while an API request is in flight, leaves no CLI and sends no
further API request. macOS has no ``PR_SET_PDEATHSIG`` and no ``/proc``, so the launcher is not used and no process is
found by tag: only the lifeline watcher, which stops each registered CLI's process group, stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from claudecode_model.testing import OfflineBackend, ScriptedTurn
from tests._support.platforms import command_as
from tests._support.processes import is_alive, live_descendants, process_table
from tests._support.subprocesses import SRC_DIR

pytestmark = pytest.mark.cli

STALL_SECONDS = 6.0
"""How long the backend holds the first reply in the in-flight case; past it, an orphaned CLI would go on."""

PROGRAM = """
import json, sys, time
from pydantic_ai import Agent
from claudecode_model import ClaudeCodeModel

config = json.loads(sys.argv[1])
agent = Agent(ClaudeCodeModel(env=config["env"], spare_sessions=0))

@agent.tool_plain
def probe() -> str:
    print("parked", flush=True)  # the CLI's turn waits for this result (parked) from here on
    time.sleep(600)
    return "probed"

print(agent.run_sync("go").output)
"""


def start_program(backend: OfflineBackend) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *command_as("darwin", PROGRAM), json.dumps({"env": backend.cli_env()})],
        env={**os.environ, "PYTHONPATH": str(SRC_DIR)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def group_watchers() -> set[int]:
    """The lifeline watchers in ``groups`` mode (the macOS one) running now."""
    return {
        entry.pid
        for entry in process_table()
        if entry.alive and len(entry.argv) >= 2 and entry.argv[-2].endswith("posix.py") and entry.argv[-1] == "groups"
    }


def kill_and_check(program: subprocess.Popen[str], backend: OfflineBackend, requests: int) -> None:
    """SIGKILL the program; its CLI processes must be gone within 2 s, and no API request may follow."""
    clis = live_descendants(program.pid)
    assert clis, "the CLI is not running"
    watchers = group_watchers()
    assert watchers, "no lifeline watcher in groups mode (the macOS branch) runs"
    program.send_signal(signal.SIGKILL)
    program.wait()
    killed_at = time.monotonic()
    while any(is_alive(pid) for pid in clis) and time.monotonic() - killed_at < 10:
        time.sleep(0.02)
    survivors = sorted(pid for pid in clis if is_alive(pid))
    gone_after = time.monotonic() - killed_at
    for pid in survivors:  # leave nothing running, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"CLI processes outlived their program: {survivors}"
    assert gone_after < 2.0, f"the CLI took {gone_after:.2f} s to stop"
    time.sleep(STALL_SECONDS + 2)  # an orphaned CLI would have sent its next request by now
    assert len(backend.requests) == requests
    while any(is_alive(pid) for pid in watchers) and time.monotonic() - killed_at < 20:
        time.sleep(0.05)
    assert not any(is_alive(pid) for pid in watchers), "the lifeline watcher outlived its program"


def finish(program: subprocess.Popen[str]) -> str:
    if program.poll() is None:
        program.kill()
        program.wait()
    _, stderr = program.communicate()
    return stderr


def test_a_program_killed_while_a_tool_call_is_parked_leaves_no_cli():
    script = [ScriptedTurn.tool_call("mcp__pydantic_tools__probe", {}), ScriptedTurn.text("done")]
    with OfflineBackend(script) as backend:
        program = start_program(backend)
        try:
            assert program.stdout is not None
            line = program.stdout.readline()
            assert line == "parked\n", finish(program)
            assert len(backend.requests) == 1
            kill_and_check(program, backend, requests=1)
        finally:
            finish(program)


def test_a_program_killed_while_a_request_is_in_flight_leaves_no_cli():
    script = [ScriptedTurn.tool_call("mcp__pydantic_tools__probe", {}, delay=STALL_SECONDS), ScriptedTurn.text("done")]
    with OfflineBackend(script) as backend:
        program = start_program(backend)
        try:
            deadline = time.monotonic() + 90
            while not backend.requests and time.monotonic() < deadline and program.poll() is None:
                time.sleep(0.05)
            assert len(backend.requests) == 1, finish(program)
            kill_and_check(program, backend, requests=1)
        finally:
            finish(program)
