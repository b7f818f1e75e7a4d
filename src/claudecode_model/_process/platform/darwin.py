"""macOS: the POSIX calls without ``/proc`` (a CLI is stopped by its process group, and a killed program's CLIs by
the lifeline watcher's groups), the physical memory from ``sysctl hw.memsize``, the peer check through
``LOCAL_PEERCRED`` (what ``getpeereid()`` reads), and the login in the Keychain."""

from __future__ import annotations

import struct
from collections.abc import Collection
from pathlib import Path
from typing import Any

from claudecode_model._process.platform.posix import (
    CLI_TAG_VARIABLE,
    is_locked,
    lock_exclusive,
    own_session_options,
    owned_by_user,
    process_alive,
    process_exited,
    reaped,
    signal_group,
    signal_process,
    stop_child,
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
    "physical_memory_bytes",
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

NAME = "darwin"
CLI_BINARY = "claude"
LIFELINE = "groups"
"""A killed program's CLIs are stopped by their process groups: the watcher is told each CLI's pid once it runs."""
LOGIN_IN_KEYCHAIN = True
"""Claude Code keeps the subscription login in the macOS Keychain, not in ``.credentials.json``."""
UNIX_SOCKETS = True
MAX_SOCKET_PATH = 103
"""Longest path an ``AF_UNIX`` address can hold on macOS (104-byte ``sun_path`` minus its NUL)."""

MEMORY_SHARE = 2
"""macOS has no cheap count of available memory like Linux's ``MemAvailable``: 1/``MEMORY_SHARE`` of the physical
memory is taken as what CLIs may use."""

_SOL_LOCAL = 0
_LOCAL_PEERCRED = 0x001
_LOCAL_PEERPID = 0x002
_XUCRED = struct.Struct("=IIh2x16I")
"""``struct xucred``: version, uid, group count, 16 groups."""
_XUCRED_VERSION = 0


def event_loop_problem(loop: object) -> str | None:
    """Why ``loop`` cannot start the CLI (``None``: it can; every asyncio loop here spawns processes)."""
    return None


def guarded_cli_path(cli_path: Path) -> Path:
    """``cli_path`` itself: macOS has no ``PR_SET_PDEATHSIG``, the lifeline alone stops a killed program's CLIs."""
    return cli_path


def tie_to_program(tag: str, pid: int) -> None:
    """Nothing to do here: the lifeline tells its watcher the group of the CLI ``pid`` (see
    :mod:`claudecode_model._process.lifeline`)."""


def process_exiting(pid: int | None) -> bool:
    """Whether the child ``pid`` is tearing down: unknown without ``/proc`` (:func:`process_exited` tells once it
    can be waited for)."""
    return False


def signal_tagged(tags: Collection[str], *, force: bool = False) -> int:
    """No tagged process can be found without ``/proc``: the CLI's process group is what is signalled."""
    return 0


def stop_tagged(tags: Collection[str], *, grace: float | None = None) -> int:
    """No tagged process can be found without ``/proc`` (a command that left its CLI's group is not reached)."""
    return 0


def physical_memory_bytes() -> int | None:
    """The machine's physical memory (``sysctl hw.memsize``), or ``None`` if it cannot be read."""
    import ctypes  # here: asked once, for the default cap
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        sysctlbyname = libc.sysctlbyname
    except (OSError, AttributeError):
        return None
    value = ctypes.c_uint64(0)
    size = ctypes.c_size_t(ctypes.sizeof(value))
    if sysctlbyname(b"hw.memsize", ctypes.byref(value), ctypes.byref(size), None, ctypes.c_size_t(0)) != 0:
        return None
    return value.value


def available_memory_mb() -> int | None:
    """What CLIs may use of the memory, in MiB: a share of the physical memory (:data:`MEMORY_SHARE`)."""
    memory = physical_memory_bytes()
    return memory // MEMORY_SHARE // (1024 * 1024) if memory else None


def seconds_since_process_start() -> float | None:
    """Unknown here (the caller counts from its own import)."""
    return None


def peer_credentials(sock: Any) -> tuple[int | None, int] | None:
    """(pid, uid) of the process at the other end of the Unix socket ``sock``: ``LOCAL_PEERCRED`` (the uid, as
    ``getpeereid()`` reads it) and ``LOCAL_PEERPID`` (the pid, ``None`` where the system does not tell)."""
    packed = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED.size)
    version, uid, *_ = _XUCRED.unpack(packed.ljust(_XUCRED.size, b"\0"))
    if version != _XUCRED_VERSION:
        raise OSError(f"unknown struct xucred version {version}")
    try:
        pid: int | None = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID)
    except OSError:
        pid = None
    return pid, uid
