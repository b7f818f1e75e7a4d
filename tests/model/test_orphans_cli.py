"""When the Python process dies, its Claude Code CLI processes die with it and make no further API request."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudecode_model._process.platform import linux_launcher as _launcher
from claudecode_model.ipc import IPCSession
from claudecode_model.testing import OfflineBackend, ScriptedTurn

pytestmark = pytest.mark.cli

SRC_DIR = Path(__file__).resolve().parents[2] / "src"
STALL_SECONDS = 6.0

CHILD = """
import asyncio, json, sys
from pydantic_ai import Agent
from claudecode_model import ClaudeCodeModel

config = json.loads(sys.argv[1])
agent = Agent(ClaudeCodeModel(env=config["env"], tool_transport=config["transport"]))

@agent.tool_plain
def probe() -> str:
    return "probed"

print(agent.run_sync("go").output)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A private temp dir short enough to hold the IPC socket (a longer one would make it fall back to /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="cco-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("transport", ["sdk", "stdio"])
def test_a_killed_program_takes_its_cli_with_it(transport: str, short_tmp: Path):
    tmp_path = short_tmp
    script = [
        ScriptedTurn.tool_call("probe", {}, delay=STALL_SECONDS),  # the API "stalls" with the request in flight
        ScriptedTurn.text("done"),
    ]
    with OfflineBackend(script) as backend:
        config = {"env": backend.cli_env(), "transport": transport}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(config)],
            env={**os.environ, "PYTHONPATH": str(SRC_DIR), "TMPDIR": str(tmp_path)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while not backend.requests and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.05)
            assert len(backend.requests) == 1, (
                child.stderr.read().decode() if child.stderr and child.poll() is not None else ""
            )
            processes = _descendants(child.pid)
            assert processes, "the CLI is not running"
            child.send_signal(signal.SIGKILL)
            child.wait()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            if child.stderr is not None:
                child.stderr.close()
        killed_at = time.monotonic()
        while any(_alive(pid) for pid in processes) and time.monotonic() - killed_at < 10:
            time.sleep(0.02)
        survivors = sorted(pid for pid in processes if _alive(pid))
        gone_after = time.monotonic() - killed_at
        for pid in survivors:  # do not leave them running whatever happens
            os.kill(pid, signal.SIGKILL)
        assert not survivors, f"CLI processes outlived their program: {survivors}"
        assert gone_after < 2.0, f"the CLI took {gone_after:.2f} s to stop"

        time.sleep(STALL_SECONDS + 2)  # past the stall: an orphaned CLI would now send its next request
        assert len(backend.requests) == 1

    leftovers = [path.name for path in tmp_path.iterdir() if path.name.startswith("claudecode_ipc_")]
    if transport == "stdio":  # the killed program could not remove its IPC directory; the next start does
        assert leftovers == [name for name in leftovers if name.startswith(f"claudecode_ipc_{child.pid}_")]
        assert len(leftovers) == 1
        asyncio.run(_start_and_stop_an_ipc_session(tmp_path))
        assert not [path for path in tmp_path.iterdir() if path.name.startswith("claudecode_ipc_")]
    else:
        assert leftovers == []


def _runs_sleep(pid: int) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name == "sleep"
    except OSError:
        return False


async def _start_and_stop_an_ipc_session(tmp_dir: Path) -> None:
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_dir)
    try:
        session = IPCSession({}, [])
        await session.start()
        await session.stop()
    finally:
        tempfile.tempdir = saved


@pytest.mark.parametrize("kind", ["setpriv", "python"])
def test_each_launcher_kills_its_program_when_the_parent_dies(kind: str, tmp_path: Path):
    setpriv = _launcher._setpriv() if kind == "setpriv" else None
    if kind == "setpriv" and setpriv is None:
        pytest.skip("no setpriv with --pdeathsig here")
    launcher = _launcher._launcher_for("/bin/sleep", setpriv)
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen(  # a parent that starts the launcher, reports the pid, and waits
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            f"p = subprocess.Popen([{str(launcher)!r}, '30'])\n"
            f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
            "time.sleep(60)\n",
        ]
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        sleeper = int(pid_file.read_text())
        # The program itself runs (the launcher has set the death signal and exec'd it): setpriv's own command line
        # names the program already, so only the executable tells.
        while not _runs_sleep(sleeper) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _alive(sleeper)
        parent.kill()
        parent.wait()
        killed_at = time.monotonic()
        while _alive(sleeper) and time.monotonic() - killed_at < 10:
            time.sleep(0.02)
        alive = _alive(sleeper)
        if alive:
            os.kill(sleeper, signal.SIGKILL)
        assert not alive, "the program outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
