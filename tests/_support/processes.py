"""The process tree, read from ``/proc``: who is alive, who is whose child, what each one runs.

Where there is no ``/proc`` (macOS) the table comes from ``ps`` instead (an argv then is its command split at
spaces), so that the leak guard of every test works there too; what only ``/proc`` tells (a process's environment,
its resident memory) is left to the tests that run on Linux."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator


@dataclass(frozen=True)
class ProcessEntry:
    """One row of the process table."""

    pid: int
    ppid: int
    state: str
    argv: list[str]
    pgid: int

    @property
    def alive(self) -> bool:
        """Running or sleeping, not a zombie waiting to be reaped."""
        return self.state != "Z"


HAS_PROC = os.path.isdir("/proc/self")
"""Whether the process table can be read from ``/proc`` (Linux)."""


def process_table() -> Iterator[ProcessEntry]:
    """Every process on the machine (zombies included; see :attr:`ProcessEntry.alive`)."""
    if not HAS_PROC:
        yield from ps_table()
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                stat = stat_file.read().decode(errors="replace")
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline_file:
                argv = [part.decode(errors="replace") for part in cmdline_file.read().split(b"\0") if part]
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        yield ProcessEntry(int(entry), int(fields[1]), fields[0], argv, int(fields[2]))


def ps_table() -> Iterator[ProcessEntry]:
    """The process table as ``ps`` prints it (POSIX options; what :func:`process_table` reads without ``/proc``)."""
    listing = subprocess.run(
        ["ps", "-A", "-o", "pid=,ppid=,pgid=,stat=,args="], capture_output=True, text=True, check=True
    ).stdout
    for line in listing.splitlines():
        pid, ppid, pgid, state, *argv = line.split()
        yield ProcessEntry(int(pid), int(ppid), state[:1], argv, int(pgid))


def environment(pid: int) -> list[bytes]:
    """The ``NAME=value`` entries of a process's environment (none if it is gone or not ours to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ_file:
            return environ_file.read().split(b"\0")
    except OSError:
        return []


def live_descendants(pid: int | None = None) -> set[int]:
    """Every live (non-zombie) descendant of ``pid`` (this process by default)."""
    children: dict[int, list[int]] = {}
    for process in process_table():
        if process.alive:
            children.setdefault(process.ppid, []).append(process.pid)
    found: set[int] = set()
    frontier = [os.getpid() if pid is None else pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def live_children(pid: int | None = None) -> list[ProcessEntry]:
    """The live direct children of ``pid`` (this process by default)."""
    parent = os.getpid() if pid is None else pid
    return [process for process in process_table() if process.ppid == parent and process.alive]


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    if not HAS_PROC:
        return any(entry.pid == pid and entry.alive for entry in ps_table())
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def cmdline(pid: int) -> list[str]:
    """The argv of ``pid`` ([] if it is gone)."""
    if not HAS_PROC:
        return next((entry.argv for entry in ps_table() if entry.pid == pid), [])
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def environ(pid: int) -> dict[str, str]:
    """The environment ``pid`` was started with."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode(errors="replace").split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def cli_children() -> list[int]:
    """Live Claude Code CLI processes that are direct children of this process."""
    return sorted(
        process.pid for process in live_children() if process.argv and os.path.basename(process.argv[0]) == "claude"
    )


def rss_mb(pid: int) -> float:
    """The resident memory of ``pid`` in MB (``VmRSS`` of its ``/proc`` status; 0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stop_process(process: subprocess.Popen[Any] | None, how: signal.Signals, timeout: float) -> None:
    """Ask ``process`` to stop with the signal ``how`` (if it still runs); SIGKILL it after ``timeout`` seconds."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(how)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
