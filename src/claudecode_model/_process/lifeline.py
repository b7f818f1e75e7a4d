"""The lifeline: when this program dies (even by SIGKILL), the processes of its CLIs die too, commands included.

One small watcher process per program (:func:`~claudecode_model._process.oscalls.start_watcher`; not a child of
the program), started at the first CLI start, holds one end of a pipe (a Unix socket pair on macOS) whose other end
only this program holds (non-inheritable: neither the CLIs nor their commands keep it open). The program tells it the
tag of each CLI before it starts (:func:`watch`) and when its processes are stopped (:func:`release`). When the
lifeline closes (the program ended, however), the watcher stops every process still carrying a registered tag and
exits; a program that ends normally has released them all, and its watcher just exits. The watcher runs in a session
of its own (the terminal's Ctrl-C does not reach it).

How the watcher finds what to stop depends on the platform (:data:`~claudecode_model._process.platform.LIFELINE`):
on Linux, every process carrying a registered tag (``/proc``), and the CLI launcher's ``PR_SET_PDEATHSIG`` stops the
CLI itself at once; on macOS (no ``/proc``, no death signal), the process group of each registered CLI, whose pid the
program tells it the moment the CLI is spawned (:func:`started`, from the session's transport). On Windows there is
no watcher: :func:`started` puts the CLI in a Job Object with kill-on-close
(:func:`~claudecode_model._process.platform.windows.tie_to_program`), also the moment it is spawned.

On macOS the watcher also holds a copy of the write end of each CLI's standard input (sent over the socket). The
program's death closes the program's own copy at the moment the watcher learns of it; without the watcher's copy,
a CLI scheduled before the watcher would see the end of its input, fail the tool calls it waits for and send Claude
one more request before it is killed. The watcher closes its copies only once it has killed the CLIs' groups. A CLI
whose input the program ends (:func:`input_ended`, before its own copy is closed) gets the end of input once the
watcher has read that (a few milliseconds later; no answer is awaited).

A watcher that died is started again at the next message, with every tag (and input copy) still registered. A child
made by ``fork()`` closes its copy of the lifeline (else it would outlive the program) and starts its own watcher.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

from claudecode_model._process import platform
from claudecode_model._process.platform.posix import start_watcher

__all__ = ["HOLDS_INPUT", "input_ended", "release", "started", "watch"]

logger = logging.getLogger(__name__)


class _Lifeline:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channel: _Channel | None = None
        self._tags: set[str] = set()
        self._groups: dict[str, int] = {}
        self._inputs: dict[str, int] = {}
        """This program's duplicate of each CLI's input (a watcher started again gets a copy of it)."""

    def watch(self, tag: str) -> None:
        with self._lock:
            self._tags.add(tag)
            self._send(f"+{tag}\n".encode())

    def group(self, tag: str, leader: int, stdin: int | None) -> None:
        with self._lock:
            if tag not in self._tags:
                return
            self._groups[tag] = leader
            message = f"={tag} {leader}\n".encode()
            fds: list[int] = []
            if stdin is not None:
                self._drop_input(tag)
                try:
                    self._inputs[tag] = os.dup(stdin)  # non-inheritable, like the original
                except OSError as error:  # out of file descriptors: the group alone is registered
                    logger.warning("the lifeline watcher gets no copy of a CLI's input (%s)", error)
                else:
                    message += f">{tag}\n".encode()
                    fds.append(self._inputs[tag])
            self._send(message, fds)

    def input_ended(self, tag: str) -> None:
        with self._lock:
            if self._drop_input(tag):
                self._send(f"<{tag}\n".encode())

    def release(self, tag: str) -> None:
        with self._lock:
            if tag in self._tags:
                self._tags.discard(tag)
                self._groups.pop(tag, None)
                self._drop_input(tag)
                self._send(f"-{tag}\n".encode())

    def _drop_input(self, tag: str) -> bool:
        fd = self._inputs.pop(tag, None)
        if fd is None:
            return False
        os.close(fd)
        return True

    def _send(self, message: bytes, fds: list[int] | None = None) -> None:
        for _ in range(2):
            if self._channel is None and not self._start():
                return
            assert self._channel is not None
            try:
                self._channel.send(message, fds or [])
                return
            except BlockingIOError:
                logger.warning("the lifeline watcher does not read its pipe; a registration was dropped")
                return
            except OSError as error:  # the watcher is gone: start another one with every tag
                logger.debug("the lifeline watcher is gone (%s); starting another one", error)
                self._forget()
                message = b"".join(f"+{tag}\n".encode() for tag in sorted(self._tags))
                message += b"".join(f"={tag} {leader}\n".encode() for tag, leader in sorted(self._groups.items()))
                message += b"".join(f">{tag}\n".encode() for tag in sorted(self._inputs))
                fds = [self._inputs[tag] for tag in sorted(self._inputs)]

    def _start(self) -> bool:
        channel, watcher_end = _Channel.open(platform.LIFELINE)
        try:
            start_watcher(watcher_end, platform.LIFELINE)
        except OSError as error:
            channel.close()
            logger.warning("cannot start the lifeline watcher (%s); a killed program may leave commands running", error)
            return False
        finally:
            os.close(watcher_end)
        self._channel = channel
        logger.debug("lifeline watcher started")
        return True

    def _forget(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def after_fork(self) -> None:
        """In a forked child: let go of the parent's watcher (a fresh one starts at the child's first CLI)."""
        self._lock = threading.Lock()
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        for fd in self._inputs.values():
            os.close(fd)
        self._tags = set()
        self._groups = {}
        self._inputs = {}


class _Channel:
    """This program's end of the lifeline: the write end of a pipe, or (where the watcher holds the CLIs' input
    copies) one end of a Unix socket pair, which carries file descriptors. Non-blocking, non-inheritable."""

    def __init__(self, fd: int, sock: socket.socket | None) -> None:
        self._fd = fd
        self._socket = sock

    @classmethod
    def open(cls, mode: str) -> tuple[_Channel, int]:
        """A new lifeline for a watcher in ``mode``: this program's end, and the watcher's (for the caller to close
        once the watcher has it)."""
        if mode != "groups":
            read_fd, write_fd = os.pipe()  # both non-inheritable
            os.set_blocking(write_fd, False)
            return cls(write_fd, None), read_fd
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # both non-inheritable
        ours.setblocking(False)
        return cls(ours.fileno(), ours), theirs.detach()

    def send(self, message: bytes, fds: list[int]) -> None:
        """Send ``message`` (and ``fds`` with it, on a socket) at once; ``BlockingIOError`` if the watcher lags."""
        if self._socket is None:
            os.write(self._fd, message)
            return
        sent = socket.send_fds(self._socket, [message], fds) if fds else self._socket.send(message)
        if sent < len(message):  # a few bytes into a nearly full socket: send the rest, blocking briefly
            self._socket.setblocking(True)
            try:
                self._socket.sendall(message[sent:])
            finally:
                self._socket.setblocking(False)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
        else:
            os.close(self._fd)


_LIFELINE = _Lifeline()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LIFELINE.after_fork)


def watch(tag: str) -> None:
    """Stop the processes tagged ``tag`` if this program dies before :func:`release` (starts the watcher)."""
    if platform.LIFELINE != "job":
        _LIFELINE.watch(tag)


HOLDS_INPUT = platform.LIFELINE == "groups"
"""Whether the watcher holds a copy of each CLI's input (pass it to :func:`started`, and call :func:`input_ended`
before this program closes its own copy)."""


def started(tag: str, pid: int, stdin: int | None = None) -> None:
    """The CLI tagged ``tag`` was just spawned as process ``pid`` (the leader of its own group), with ``stdin`` the
    write end of its input where :data:`HOLDS_INPUT`: tie it to this program where the tag alone does not find it
    (macOS: the watcher is told its group and holds a copy of its input; Windows: a Job Object)."""
    match platform.LIFELINE:
        case "tags":
            return
        case "groups":
            _LIFELINE.group(tag, pid, stdin)
        case "job":
            try:
                platform.tie_to_program(tag, pid)
            except OSError as error:
                logger.warning(
                    "cannot tie the CLI %d to this program (%s); a killed program may leave it running", pid, error
                )
        case other:
            raise AssertionError(f"unknown lifeline {other!r}")


def input_ended(tag: str) -> None:
    """This program is about to close the input of the CLI tagged ``tag`` (end of input, or its close): the watcher
    drops its copy, so that the CLI gets the end of input."""
    if HOLDS_INPUT:
        _LIFELINE.input_ended(tag)


def release(tag: str) -> None:
    """The processes tagged ``tag`` were stopped: the watcher forgets them."""
    if platform.LIFELINE != "job":
        _LIFELINE.release(tag)
