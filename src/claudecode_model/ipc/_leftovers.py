"""The IPC directories of processes that died without cleaning up (SIGKILL, an unhandled SIGTERM, a crash).

Each IPC session's directory is named ``claudecode_ipc_<owner pid>_<random>``. When a new session starts, the
directories of this user whose owner process is gone and whose socket nobody listens on are removed. A directory of
a live process, of another user, or without an owner pid in its name is never touched. Other private directories
named the same way with another prefix (the CLI's temp folders, :mod:`claudecode_model._process.temp`) are swept alike.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
from pathlib import Path

from claudecode_model._process import platform
from claudecode_model.ipc._constants import SOCKET_FILE_PREFIX, SOCKET_FILE_SUFFIX

__all__ = ["OWNER_LOCK", "directory_prefix", "hold_owner_lock", "release_owner_lock", "remove_dead_leftovers"]

OWNER_LOCK = ".owner.lock"
"""A file in a private directory that its owner keeps locked (``flock``) while it uses the directory."""

logger = logging.getLogger(__name__)


def directory_prefix(prefix: str = SOCKET_FILE_PREFIX) -> str:
    """The ``mkdtemp`` prefix of this process's IPC directories (its pid recorded in the name)."""
    return f"{prefix}{os.getpid()}_"


def remove_dead_leftovers(base: str | Path, prefix: str = SOCKET_FILE_PREFIX) -> list[Path]:
    """Remove the IPC directories (named with ``prefix``) in ``base`` left by dead processes of this user; return
    what was removed."""
    owned = re.compile(rf"^{re.escape(prefix)}(\d+)_[^/]+$")
    removed: list[Path] = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        match = owned.match(name)
        if match is None:
            continue
        directory = Path(base) / name
        pid = int(match.group(1))
        if (
            pid == os.getpid()
            or platform.process_alive(pid)
            or not _owned_directory(directory)
            or _listening(directory)
        ):
            continue
        if _locked(directory):
            continue  # its owner is alive where this process cannot see it (another PID namespace)
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
        logger.info("removed the directory %s left by process %d, which is gone", directory, pid)
    return removed


def hold_owner_lock(directory: str | Path) -> int | None:
    """Lock ``directory``'s :data:`OWNER_LOCK` for as long as the returned descriptor is open (``None``: no lock,
    the directory is then judged by its owner's pid alone)."""
    try:
        fd = os.open(Path(directory) / OWNER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    if not platform.lock_exclusive(fd):
        os.close(fd)
        return None
    return fd


def release_owner_lock(fd: int | None) -> None:
    """Release a lock of :func:`hold_owner_lock`."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _locked(directory: Path) -> bool:
    """Whether a live owner holds ``directory``'s :data:`OWNER_LOCK`."""
    try:
        fd = os.open(directory / OWNER_LOCK, os.O_RDONLY)
    except OSError:
        return False
    try:
        return platform.is_locked(fd)
    finally:
        os.close(fd)


def _owned_directory(directory: Path) -> bool:
    try:
        info = directory.lstat()
    except OSError:
        return False
    return directory.is_dir() and not directory.is_symlink() and platform.owned_by_user(info)


def _listening(directory: Path) -> bool:
    """Whether a server still accepts connections on a socket in ``directory`` (a live owner, whatever its pid)."""
    try:
        sockets = [entry for entry in directory.iterdir() if entry.name.endswith(SOCKET_FILE_SUFFIX)]
    except OSError:
        return True  # unreadable: leave it
    if not platform.UNIX_SOCKETS:
        return False  # no socket can listen there
    for path in sockets:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(0.2)
        try:
            probe.connect(str(path))
        except OSError:
            continue
        else:
            return True
        finally:
            with contextlib.suppress(OSError):
                probe.close()
    return False
