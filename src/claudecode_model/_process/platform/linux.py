"""Linux: the POSIX calls with ``/proc`` (tagged processes, memory, process start), pidfds, ``PR_SET_PDEATHSIG``
(the CLI launcher of :mod:`.linux_launcher`) and ``SO_PEERCRED``."""

from __future__ import annotations

import os
import time
from typing import Any

from claudecode_model._process.platform.linux_launcher import guarded_cli_path
from claudecode_model._process.platform.posix import (
    CLI_TAG_VARIABLE,
    is_locked,
    lock_exclusive,
    own_session_options,
    owned_by_user,
    process_alive,
    process_exited,
    process_exiting,
    reaped,
    signal_group,
    signal_process,
    signal_tagged,
    stop_child,
    stop_tagged,
    user_id,
)

__all__ = [
    "CLI_BINARY",
    "CLI_TAG_VARIABLE",
    "LIFELINE",
    "LOGIN_IN_KEYCHAIN",
    "MAX_SOCKET_PATH",
    "NAME",
    "UNIX_SOCKETS",
    "available_memory_mb",
    "event_loop_problem",
    "guarded_cli_path",
    "is_locked",
    "lock_exclusive",
    "own_session_options",
    "owned_by_user",
    "peer_credentials",
    "process_alive",
    "process_exited",
    "process_exiting",
    "reaped",
    "seconds_since_process_start",
    "signal_group",
    "signal_process",
    "signal_tagged",
    "stop_child",
    "stop_tagged",
    "tie_to_program",
    "user_id",
]

NAME = "linux"
CLI_BINARY = "claude"
"""The CLI's file name in the SDK wheel's ``_bundled`` folder."""
LIFELINE = "tags"
"""How a killed program's CLIs are stopped: its watcher finds their processes by tag in ``/proc``."""
LOGIN_IN_KEYCHAIN = False
"""Whether Claude Code keeps the subscription login in the system's keychain rather than ``.credentials.json``."""
UNIX_SOCKETS = True
"""Whether ``AF_UNIX`` sockets exist (the stdio transport's IPC needs them)."""
MAX_SOCKET_PATH = 107
"""Longest path an ``AF_UNIX`` address can hold (``sun_path`` minus its terminating NUL)."""


def event_loop_problem(loop: object) -> str | None:
    """Why ``loop`` cannot start the CLI (``None``: it can; every asyncio loop here spawns processes)."""
    return None


def tie_to_program(tag: str, pid: int) -> None:
    """Nothing to do here: the launcher's death signal and the lifeline's tags already tie the CLI ``pid`` to this
    program (see :mod:`claudecode_model._process.lifeline`)."""


def available_memory_mb() -> int | None:
    """The memory available for new processes (``MemAvailable``), in MiB; ``None`` if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    except (OSError, ValueError, AttributeError):
        return None


def seconds_since_process_start() -> float | None:
    """Seconds since this process started, from the kernel's record of its start (10 ms resolution)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as file:
            stat = file.read()
        start_ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22, starttime, in clock ticks
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def peer_credentials(sock: Any) -> tuple[int | None, int] | None:
    """(pid, uid) of the process at the other end of the Unix socket ``sock`` (``SO_PEERCRED``)."""
    import socket  # here: only the stdio transport's server asks (a light import of the package stays light)
    import struct

    packed = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", packed)
    return pid, uid
