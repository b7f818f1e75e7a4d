"""Windows: processes stopped with ``TerminateProcess`` / ``TerminateJobObject``, liveness from the exit code (no
signals), each CLI in a Job Object with kill-on-close (the program's handle to it closes when the program dies, however
it dies, and Windows then ends every process of the job: the CLI and what it started), no ``AF_UNIX``, no uid.

Every call to the Windows API goes through :class:`WindowsAPI` (:func:`api`), made with ``ctypes`` at first use; tests
install a fake one with :func:`use_api` and run this module on any system.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import getpass
import importlib
import os
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from claudecode_model._process.platform.posix import CLI_TAG_VARIABLE

__all__ = [
    "CLI_BINARY",
    "CLI_TAG_VARIABLE",
    "LIFELINE",
    "LOGIN_IN_KEYCHAIN",
    "MAX_SOCKET_PATH",
    "NAME",
    "UNIX_SOCKETS",
    "WindowsAPI",
    "api",
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
    "use_api",
    "user_id",
]

NAME = "win32"
CLI_BINARY = "claude.exe"
LIFELINE = "job"
"""A killed program's CLIs end with their Job Objects (kill-on-close): no watcher process."""
LOGIN_IN_KEYCHAIN = False
UNIX_SOCKETS = False
"""CPython on Windows has no ``AF_UNIX``: the stdio transport's IPC cannot run (the ``sdk`` transport needs none)."""
MAX_SOCKET_PATH = 107

CREATE_NEW_PROCESS_GROUP = 0x00000200
"""The console's Ctrl-C does not reach a process started with it."""

_STOP_WAIT_SECONDS = 1.0


class WindowsAPI(Protocol):
    """The Windows calls of this module (kernel32); handles are integers, ``None`` where there is none."""

    def open_process(self, pid: int) -> int | None:
        """A handle on process ``pid`` that can query, wait for and terminate it (``None``: no such process)."""

    def exit_code(self, process: int) -> int | None:
        """The exit code of the process, ``None`` while it runs."""

    def terminate_process(self, process: int) -> None:
        """End the process (``TerminateProcess``); nothing if it has ended."""

    def create_job(self) -> int:
        """A new Job Object with ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE``."""

    def assign_to_job(self, job: int, process: int) -> None:
        """Put the process in the job (``AssignProcessToJobObject``); what it starts from then on is in it too."""

    def terminate_job(self, job: int) -> None:
        """End every process of the job (``TerminateJobObject``)."""

    def close_handle(self, handle: int) -> None:
        """Close a handle (a job's last one ends its processes)."""

    def available_memory_bytes(self) -> int | None:
        """The physical memory available (``GlobalMemoryStatusEx``'s ``ullAvailPhys``)."""


_api: WindowsAPI | None = None


def use_api(windows_api: WindowsAPI | None) -> None:
    """Make the calls of this module through ``windows_api`` (``None``: the real kernel32 again, at next use)."""
    global _api
    _api = windows_api


def api() -> WindowsAPI:
    """The Windows API in use (the real kernel32, made at first use)."""
    global _api
    if _api is None:
        _api = _Kernel32()
    return _api


@dataclass
class _Job:
    tag: str
    handle: int


_jobs: dict[int, _Job] = {}
"""The Job Object of each CLI this program started, by the CLI's pid, until its processes are stopped."""
_jobs_lock = threading.Lock()


def event_loop_problem(loop: object) -> str | None:
    """Why ``loop`` cannot start the CLI: on Windows only the Proactor loop (asyncio's default since Python 3.8)
    starts subprocesses; a ``SelectorEventLoop`` (set by ``WindowsSelectorEventLoopPolicy``) cannot."""
    proactor = getattr(asyncio, "ProactorEventLoop", None)
    if proactor is not None and isinstance(loop, proactor):
        return None
    return (
        f"the event loop ({type(loop).__name__}) cannot start subprocesses on Windows, and Claude Code runs as one: "
        "use asyncio's default Proactor loop (do not set WindowsSelectorEventLoopPolicy)"
    )


def guarded_cli_path(cli_path: Path) -> Path:
    """``cli_path`` itself: no death signal on Windows, each CLI ends with its Job Object (:func:`tie_to_program`)."""
    return cli_path


def tie_to_program(tag: str, pid: int) -> None:
    """Put the CLI ``pid`` (tagged ``tag``) in a Job Object of its own with kill-on-close: it and every process it
    starts end when this program's handle closes (:func:`stop_child`, or the program's death)."""
    windows = api()
    process = windows.open_process(pid)
    if process is None:
        return
    job = windows.create_job()
    try:
        windows.assign_to_job(job, process)
    except OSError:
        windows.close_handle(job)
        raise
    finally:
        windows.close_handle(process)
    with _jobs_lock:
        _jobs[pid] = _Job(tag, job)


def own_session_options() -> dict[str, Any]:
    """The ``subprocess`` keywords that start a child in a process group of its own (the console's Ctrl-C does not
    reach it)."""
    return {"creationflags": CREATE_NEW_PROCESS_GROUP}


def signal_process(pid: int, *, force: bool = False) -> None:
    """End process ``pid`` (``TerminateProcess``: Windows has no request to stop, ``force`` or not)."""
    windows = api()
    process = windows.open_process(pid)
    if process is None:
        return
    try:
        windows.terminate_process(process)
    finally:
        windows.close_handle(process)


def signal_group(leader: int, *, force: bool = False) -> None:
    """End the CLI ``leader`` and every process of its job (the process alone if it has none)."""
    with _jobs_lock:
        job = _jobs.get(leader)
    if job is None:
        signal_process(leader, force=force)
    else:
        api().terminate_job(job.handle)


def process_exited(pid: int | None) -> bool:
    """Whether process ``pid`` has ended (or never existed)."""
    return pid is not None and not process_alive(pid)


def reaped(pid: int) -> bool:
    """Whether the child ``pid`` has ended (Windows keeps no zombie; its owner's handle keeps the pid in use)."""
    return not process_alive(pid)


def process_exiting(pid: int | None) -> bool:
    """Whether process ``pid`` has ended (there is no state between running and ended to see)."""
    return process_exited(pid)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it can be opened and has no exit code yet (no signal is sent)."""
    windows = api()
    process = windows.open_process(pid)
    if process is None:
        return False
    try:
        return windows.exit_code(process) is None
    finally:
        windows.close_handle(process)


def stop_child(pid: int | None) -> None:
    """End the CLI ``pid`` and its job, wait up to a second for it, and close the job."""
    if pid is None:
        return
    signal_group(pid, force=True)
    deadline = time.monotonic() + _STOP_WAIT_SECONDS
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    with _jobs_lock:
        job = _jobs.pop(pid, None)
    if job is not None:
        api().close_handle(job.handle)


def signal_tagged(tags: Collection[str], *, force: bool = False) -> int:
    """End the jobs of the CLIs tagged ``tags`` (their commands are in them); how many jobs there were."""
    with _jobs_lock:
        jobs = [job for job in _jobs.values() if job.tag in tags]
    for job in jobs:
        api().terminate_job(job.handle)
    return len(jobs)


def stop_tagged(tags: Collection[str], *, grace: float | None = None) -> int:
    """End the jobs of the CLIs tagged ``tags`` and close them (no grace: Windows has no request to stop)."""
    with _jobs_lock:
        stopping = {pid: job for pid, job in _jobs.items() if job.tag in tags}
        for pid in stopping:
            del _jobs[pid]
    for job in stopping.values():
        api().terminate_job(job.handle)
        api().close_handle(job.handle)
    return len(stopping)


def user_id() -> str:
    """This process's user name (what names its private directories)."""
    return getpass.getuser()


def owned_by_user(info: os.stat_result) -> bool:
    """Windows reports no owner in ``stat``: a file in this user's (private) temp dir is taken as theirs."""
    return True


def lock_exclusive(fd: int) -> bool:
    """Lock the first byte of the open file ``fd`` (``msvcrt.locking``); whether it could, without waiting."""
    msvcrt = importlib.import_module("msvcrt")
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def is_locked(fd: int) -> bool:
    """Whether another holder has the lock of :func:`lock_exclusive` on the file ``fd`` is open on."""
    msvcrt = importlib.import_module("msvcrt")
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return True
    with contextlib.suppress(OSError):
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    return False


def available_memory_mb() -> int | None:
    """The physical memory available, in MiB; ``None`` if unknown."""
    available = api().available_memory_bytes()
    return available // (1024 * 1024) if available is not None else None


def seconds_since_process_start() -> float | None:
    """Unknown here (the caller counts from its own import)."""
    return None


def peer_credentials(sock: Any) -> tuple[int | None, int] | None:
    """No Unix sockets on Windows: nothing to read."""
    return None


_DWORD = ctypes.c_uint32


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in ("r", "w", "o", "rt", "wt", "ot")]


class _BasicLimits(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", _DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", _DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", _DWORD),
        ("SchedulingClass", _DWORD),
    ]


class _ExtendedLimits(ctypes.Structure):
    """``JOBOBJECT_EXTENDED_LIMIT_INFORMATION``."""

    _fields_ = [
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


class _MemoryStatus(ctypes.Structure):
    """``MEMORYSTATUSEX``."""

    _fields_ = [
        ("dwLength", _DWORD),
        ("dwMemoryLoad", _DWORD),
        *[
            (name, ctypes.c_ulonglong)
            for name in (
                "ullTotalPhys",
                "ullAvailPhys",
                "ullTotalPageFile",
                "ullAvailPageFile",
                "ullTotalVirtual",
                "ullAvailVirtual",
                "ullAvailExtendedVirtual",
            )
        ],
    ]


class _Kernel32:
    """The real :class:`WindowsAPI`, through ``ctypes`` (handles as ``c_void_p``)."""

    _PROCESS_TERMINATE = 0x0001
    _PROCESS_SET_QUOTA = 0x0100
    _PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
    _SYNCHRONIZE = 0x00100000
    _STILL_ACTIVE = 259
    _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
    _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000

    def __init__(self) -> None:
        self._kernel32: Any = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009 (Windows only)
        self._kernel32.OpenProcess.restype = ctypes.c_void_p
        self._kernel32.CreateJobObjectW.restype = ctypes.c_void_p

    def _error(self, call: str) -> OSError:
        code: int = getattr(ctypes, "get_last_error")()  # noqa: B009 (Windows only)
        return OSError(code, f"{call} failed (Windows error {code})")

    def open_process(self, pid: int) -> int | None:
        access = (
            self._PROCESS_TERMINATE
            | self._PROCESS_SET_QUOTA
            | self._PROCESS_QUERY_LIMITED_INFORMATION
            | self._SYNCHRONIZE
        )
        handle = self._kernel32.OpenProcess(access, False, pid)
        return int(handle) if handle else None

    def exit_code(self, process: int) -> int | None:
        code = _DWORD()
        if not self._kernel32.GetExitCodeProcess(ctypes.c_void_p(process), ctypes.byref(code)):
            raise self._error("GetExitCodeProcess")
        return None if code.value == self._STILL_ACTIVE else int(code.value)

    def terminate_process(self, process: int) -> None:
        self._kernel32.TerminateProcess(ctypes.c_void_p(process), 1)  # fails only if it has ended

    def create_job(self) -> int:
        job = self._kernel32.CreateJobObjectW(None, None)
        if not job:
            raise self._error("CreateJobObjectW")
        info = _ExtendedLimits()
        info.BasicLimitInformation.LimitFlags = self._JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not self._kernel32.SetInformationJobObject(
            ctypes.c_void_p(job), self._JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)
        ):
            error = self._error("SetInformationJobObject")
            self.close_handle(int(job))
            raise error
        return int(job)

    def assign_to_job(self, job: int, process: int) -> None:
        if not self._kernel32.AssignProcessToJobObject(ctypes.c_void_p(job), ctypes.c_void_p(process)):
            raise self._error("AssignProcessToJobObject")

    def terminate_job(self, job: int) -> None:
        self._kernel32.TerminateJobObject(ctypes.c_void_p(job), 1)

    def close_handle(self, handle: int) -> None:
        self._kernel32.CloseHandle(ctypes.c_void_p(handle))

    def available_memory_bytes(self) -> int | None:
        status = _MemoryStatus()
        status.dwLength = ctypes.sizeof(status)
        if not self._kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return None
        return int(status.ullAvailPhys)
