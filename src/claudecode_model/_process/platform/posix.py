"""POSIX process calls (Linux and macOS), and the lifeline watcher: standalone, it imports nothing of the package.

The rest of the package speaks of a CLI's *processes*: the CLI itself, its own process group, and every process
that carries its tag (an environment variable with a value unique to that CLI, :data:`CLI_TAG_VARIABLE`, which the
commands of its built-in tools inherit). The tag is what finds a CLI's commands once they have left its group and
its tree: the Bash tool starts each command as ``bash -c`` in a session of its own, and a command outlives a killed
CLI re-parented to PID 1. Tagged processes are found through Linux's ``/proc`` (with pidfds); where there is no
``/proc`` (macOS) the platform module says so and a CLI is stopped by its process group alone.

Safety against pid reuse:

- A process group is signalled (:func:`signal_group`) only while its leader is this process's child and has not
  been reaped (the caller checks :func:`reaped`): a zombie keeps its pid, so the group id cannot belong to anyone
  else. Between that check and the signal the kernel would have to hand out every other pid first.
- A tagged process is signalled through a pidfd opened *before* its environment is read (:func:`stop_tagged`): if
  the pid was reused meanwhile, the environment read is the new process's, which lacks the tag, and the signal goes
  to the process the pidfd holds, never to a newcomer.

Run as a script (``python -I -S posix.py tags|groups``), this module is the *lifeline watcher*
(:func:`start_watcher`): it reads ``+tag`` / ``-tag`` / ``=tag pid`` lines on its standard input and, when that
closes (its program ended, even by SIGKILL), stops every process carrying a tag still registered (``tags``, Linux)
or the process group of each registered tag's CLI (``groups``, macOS), then exits.

In ``groups`` mode its standard input is a Unix socket, and a ``>tag`` line comes with a file descriptor
(``SCM_RIGHTS``): a copy of the write end of that CLI's standard input, which the watcher holds so that the CLI
cannot see the end of its input before it is killed (its program's death closes the program's copy at the moment
the watcher learns of it; without the watcher's copy, a CLI scheduled first would fail the tool calls it waits for
and send Claude one more request). The watcher closes the copies only after it has sent SIGKILL to every group: a
process with SIGKILL pending never runs its own code again. ``<tag`` (the program ends the CLI's input) and ``-tag``
close the copy at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any, Literal

__all__ = [
    "CLI_TAG_VARIABLE",
    "WATCHER_MODES",
    "is_locked",
    "lock_exclusive",
    "own_session_options",
    "owned_by_user",
    "process_alive",
    "process_exited",
    "process_exiting",
    "reaped",
    "signal_group",
    "signal_process",
    "signal_tagged",
    "start_watcher",
    "stop_child",
    "stop_groups",
    "stop_tagged",
    "user_id",
]

WATCHER_MODES = ("tags", "groups")
"""How the lifeline watcher finds what to stop: the processes carrying a tag (``/proc``), or each CLI's group."""

CLI_TAG_VARIABLE = "CLAUDECODE_MODEL_CLI"
"""The environment variable whose value tags one CLI process and every process it starts."""

_MAX_FDS_AT_ONCE = 256
"""The most file descriptors one read of the watcher's socket takes (one per ``>tag`` line of a message)."""

_STOP_ROUNDS = 20
"""How often :func:`stop_tagged` looks again for tagged processes (a command may fork while it is stopped)."""


def own_session_options() -> dict[str, Any]:
    """The ``subprocess`` / ``anyio.open_process`` keywords that start a child in a session (and process group) of
    its own: the terminal's Ctrl-C does not reach it, and its group can be stopped as a whole."""
    return {"start_new_session": True}


def _signal(force: bool) -> signal.Signals:
    return signal.SIGKILL if force else signal.SIGTERM


def signal_process(pid: int, *, force: bool = False) -> None:
    """Ask process ``pid`` to stop (SIGTERM), or kill it (``force``); nothing if it is gone. The caller knows
    ``pid`` is its unreaped child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, _signal(force))


def signal_group(leader: int, *, force: bool = False) -> None:
    """Stop the process group ``leader`` leads (SIGTERM, or SIGKILL with ``force``), or the process alone when it
    leads none (a start not yet in its own session). The caller knows ``leader`` is its unreaped child."""
    try:
        os.killpg(leader, _signal(force))
    except ProcessLookupError:
        signal_process(leader, force=force)
    except PermissionError:
        pass


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (any user's; not only a child of this one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def user_id() -> str:
    """This process's user id (what names its private directories)."""
    return str(os.getuid())


def owned_by_user(info: os.stat_result) -> bool:
    """Whether a file whose ``stat`` is ``info`` belongs to this process's user."""
    return info.st_uid == os.getuid()


def lock_exclusive(fd: int) -> bool:
    """Lock the open file ``fd`` for this process (released when it is closed); whether it could, without waiting."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def is_locked(fd: int) -> bool:
    """Whether another open file description holds a lock of :func:`lock_exclusive` on the file ``fd`` is open on."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def _child_state(pid: int) -> Literal["running", "exited", "reaped", "unknown"]:
    """The state of the child ``pid``, read without reaping it (asyncio's child watcher, which started it, reaps it)."""
    if not hasattr(os, "waitid"):
        return "unknown"
    try:
        status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return "reaped"
    except OSError:
        return "unknown"
    return "running" if status is None else "exited"


def process_exited(pid: int | None) -> bool:
    """Whether the child ``pid`` has exited, without reaping it (its owner's watcher may not have seen it yet)."""
    return pid is not None and _child_state(pid) in ("exited", "reaped")


def reaped(pid: int) -> bool:
    """Whether the child ``pid`` was reaped already (its number may belong to another process by now)."""
    return _child_state(pid) == "reaped"


def process_exiting(pid: int | None) -> bool:
    """Whether the child ``pid`` was killed and is still tearing down (a large multi-threaded process takes a
    while): its main thread is a zombie already, though the process cannot be waited for yet."""
    if pid is None:
        return False
    # Read with the os module: this runs for every session a turn takes, and a buffered file object costs several
    # times more.
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return False
    try:
        stat = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    return stat[stat.rindex(b")") + 2 :][:1] in (b"Z", b"X")


def stop_child(pid: int | None) -> None:
    """Stop the child ``pid`` and its group: SIGTERM, then SIGKILL if it is still there after half a second.

    It is not reaped here: asyncio's child watcher, which started it, reaps it (a reap here races with the watcher's
    own wait, which then reports exit code 255 with a warning)."""
    if pid is None:
        return
    for force in (False, True):
        if process_exited(pid):
            return
        signal_group(pid, force=force)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            if process_exited(pid):
                return
            time.sleep(0.01)


def _tagged(tags: Collection[str]) -> Iterator[tuple[int, int | None]]:
    """The processes carrying one of ``tags``: each as its pid and a pidfd held on it (``None`` without pidfds),
    opened before its environment was read. The caller closes the pidfds."""
    if not tags or not os.path.isdir("/proc"):
        return
    needles = [f"\0{CLI_TAG_VARIABLE}={tag}\0".encode() for tag in tags]
    own = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == own:
            continue
        pid = int(entry)
        pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue  # gone (or not ours to hold)
        try:
            environ = _read_environ(pid)
        except OSError:
            environ = b""
        if any(needle in environ for needle in needles):
            yield pid, pidfd
        elif pidfd is not None:
            os.close(pidfd)


def _read_environ(pid: int) -> bytes:
    fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
    try:
        chunks = [b"\0"]
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    chunks.append(b"\0")
    return b"".join(chunks)


def _send(pid: int, pidfd: int | None, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if pidfd is not None and hasattr(signal, "pidfd_send_signal"):
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)


def signal_tagged(tags: Collection[str], *, force: bool = False) -> int:
    """Send SIGTERM (SIGKILL with ``force``) to every process carrying one of ``tags``, once; how many there were."""
    return len(_signal_tagged(tags, _signal(force)))


def stop_tagged(tags: Collection[str], *, grace: float | None = None) -> int:
    """Stop every process carrying one of ``tags`` (a CLI and the commands it started, wherever they went):
    SIGKILL at once (``grace=None``), or SIGTERM first and SIGKILL to those still there after ``grace`` seconds.
    Looks again until none is left (a command may fork meanwhile). Returns how many processes were signalled."""
    signalled: set[int] = set()
    if grace is not None:
        signalled |= _signal_tagged(tags, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while signalled and time.monotonic() < deadline and _any_tagged(tags):
            time.sleep(0.02)
    for _ in range(_STOP_ROUNDS):
        killed = _signal_tagged(tags, signal.SIGKILL)
        if not killed:
            break
        signalled |= killed
        time.sleep(0.005)  # let the kernel take them down before looking again
    return len(signalled)


def _signal_tagged(tags: Collection[str], sig: signal.Signals) -> set[int]:
    found: set[int] = set()
    for pid, pidfd in _tagged(tags):
        try:
            if not process_exiting(pid):
                _send(pid, pidfd, sig)
                found.add(pid)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    return found


def _any_tagged(tags: Collection[str]) -> bool:
    for pid, pidfd in _tagged(tags):
        if pidfd is not None:
            os.close(pidfd)
        if not process_exiting(pid):
            return True
    return False


def stop_groups(leaders: Collection[int]) -> int:
    """SIGKILL the process groups ``leaders`` lead (a killed program's CLIs, each in a session of its own); how many
    were there. Used where no tag can be found (no ``/proc``): a command that left its CLI's group is not reached."""
    stopped = 0
    for leader in leaders:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, signal.SIGKILL)
            stopped += 1
    return stopped


def start_watcher(read_fd: int, mode: str = "tags") -> None:
    """Start the lifeline watcher (this module run as a script) in ``mode`` (one of :data:`WATCHER_MODES`) with
    ``read_fd`` as its standard input (the read end of a pipe; in ``groups`` mode, one end of a Unix socket pair).

    A shell started in a session of its own starts the watcher in the background and exits at once (waited for
    here, about a millisecond): the watcher is then nobody's child here (no process of the program to count or
    reap), in a session the terminal's Ctrl-C does not reach, and ignores SIGINT besides."""
    # An asynchronous command's standard input is /dev/null unless redirected: the lifeline goes through fd 3.
    if mode not in WATCHER_MODES:
        raise ValueError(f"unknown lifeline watcher mode {mode!r}")
    script = 'exec 3<&0; "$0" -I -S "$1" "$2" <&3 3<&- &'
    argv = ["/bin/sh", "-c", script, sys.executable, os.path.abspath(__file__), mode]
    shell = os.posix_spawn(
        "/bin/sh",
        argv,
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, read_fd, 0)],
        setsid=True,
        setsigdef=(signal.SIGINT, signal.SIGTERM, signal.SIGPIPE),
    )
    while True:
        try:
            _, status = os.waitpid(shell, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError(f"the shell starting the lifeline watcher failed ({status})")
        return


def _watch(mode: str) -> None:
    """The lifeline watcher's main: keep the registered tags (and their CLIs' groups and input copies) until standard
    input closes, then stop them all: by tag (``tags``) or by group (``groups``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.chdir("/")
    os.closerange(3, 1 << 16)  # hold nothing of the program's open (only the lifeline, as fd 0)
    watcher = _Watcher()
    receive = _socket_receiver() if mode == "groups" else _pipe_receiver()
    while True:
        chunk, fds = receive()
        watcher.received(fds)
        if not chunk:
            break
        watcher.feed(chunk)
    if mode == "groups":
        stop_groups(watcher.leaders())
    else:
        stop_tagged(watcher.tags)
    watcher.close_inputs()  # only now: the CLIs are killed and never see the end of their input


class _Watcher:
    """What the lifeline watcher holds: the registered tags, their CLIs' groups, and copies of their input."""

    def __init__(self) -> None:
        self.tags: set[str] = set()
        self.groups: dict[str, int] = {}
        self.inputs: dict[str, int] = {}
        self._pending = b""
        self._fds: list[int] = []  # received, not yet claimed by their ``>tag`` line

    def received(self, fds: list[int]) -> None:
        self._fds.extend(fds)

    def feed(self, chunk: bytes) -> None:
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            self._line(line[:1], line[1:].decode(errors="replace"))

    def _line(self, kind: bytes, tag: str) -> None:
        match kind:
            case b"+":
                self.tags.add(tag)
            case b"-":
                self.tags.discard(tag)
                self.groups.pop(tag, None)
                self._close_input(tag)
            case b"=":
                tag, _, leader = tag.partition(" ")
                if tag in self.tags and leader.isdigit():
                    self.groups[tag] = int(leader)
            case b">":
                fd = self._fds.pop(0) if self._fds else None  # sent with this line, so received by now
                if fd is None:
                    return
                self._close_input(tag)
                if tag in self.tags:
                    self.inputs[tag] = fd
                else:
                    os.close(fd)
            case b"<":
                self._close_input(tag)
            case _:
                return

    def _close_input(self, tag: str) -> None:
        fd = self.inputs.pop(tag, None)
        if fd is not None:
            os.close(fd)

    def leaders(self) -> list[int]:
        return [leader for tag, leader in self.groups.items() if tag in self.tags]

    def close_inputs(self) -> None:
        for tag in list(self.inputs):
            self._close_input(tag)
        for fd in self._fds:
            os.close(fd)
        self._fds = []


def _pipe_receiver() -> Callable[[], tuple[bytes, list[int]]]:
    def receive() -> tuple[bytes, list[int]]:
        return os.read(0, 65536), []

    return receive


def _socket_receiver() -> Callable[[], tuple[bytes, list[int]]]:
    import socket  # here: only the watcher in groups mode reads a socket

    lifeline = socket.socket(fileno=0)

    def receive() -> tuple[bytes, list[int]]:
        data, fds, _flags, _address = socket.recv_fds(lifeline, 65536, _MAX_FDS_AT_ONCE)
        return data, fds

    return receive


if __name__ == "__main__":
    _watch(sys.argv[1] if len(sys.argv) > 1 else "tags")
