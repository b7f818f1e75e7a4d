"""The lifeline: when this program dies (even by SIGKILL), the processes of its CLIs die too, commands included.

One small watcher process per program (:func:`~claudecode_model._process.oscalls.start_watcher`; not a child of
the program), started at the first CLI start, holds the read end of a pipe whose write end only this program holds
(non-inheritable: neither the CLIs nor their commands keep it open). The program tells it the tag of each CLI as it
starts (:func:`watch`) and when its processes are stopped (:func:`release`). When the pipe closes (the program ended,
however), the watcher stops every process still carrying a registered tag and exits; a program that ends normally
has released them all, and its watcher just exits. The watcher runs in a session of its own (the terminal's Ctrl-C
does not reach it).

How the watcher finds what to stop depends on the platform (:data:`~claudecode_model._process.platform.LIFELINE`):
on Linux, every process carrying a registered tag (``/proc``), and the CLI launcher's ``PR_SET_PDEATHSIG`` stops the
CLI itself at once; on macOS (no ``/proc``, no death signal), the process group of each registered CLI, whose pid the
program tells it once the CLI runs (:func:`started`). On Windows there is no watcher: :func:`started` puts the CLI in
a Job Object with kill-on-close (:func:`~claudecode_model._process.platform.windows.tie_to_program`).

A watcher that died is started again at the next message, with every tag still registered. A child made by
``fork()`` closes its copy of the write end (else the pipe would outlive the program) and starts its own watcher.
"""

from __future__ import annotations

import logging
import os
import threading

from claudecode_model._process import platform
from claudecode_model._process.platform.posix import start_watcher

__all__ = ["release", "started", "watch"]

logger = logging.getLogger(__name__)


class _Lifeline:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._write_fd: int | None = None
        self._tags: set[str] = set()
        self._groups: dict[str, int] = {}

    def watch(self, tag: str) -> None:
        with self._lock:
            self._tags.add(tag)
            self._send(f"+{tag}\n".encode())

    def group(self, tag: str, leader: int) -> None:
        with self._lock:
            if tag in self._tags:
                self._groups[tag] = leader
                self._send(f"={tag} {leader}\n".encode())

    def release(self, tag: str) -> None:
        with self._lock:
            if tag in self._tags:
                self._tags.discard(tag)
                self._groups.pop(tag, None)
                self._send(f"-{tag}\n".encode())

    def _send(self, message: bytes) -> None:
        for _ in range(2):
            if self._write_fd is None and not self._start():
                return
            assert self._write_fd is not None
            try:
                os.write(self._write_fd, message)
                return
            except BlockingIOError:
                logger.warning("the lifeline watcher does not read its pipe; a registration was dropped")
                return
            except OSError as error:  # the watcher is gone: start another one with every tag
                logger.debug("the lifeline watcher is gone (%s); starting another one", error)
                self._forget()
                message = b"".join(f"+{tag}\n".encode() for tag in sorted(self._tags))
                message += b"".join(f"={tag} {leader}\n".encode() for tag, leader in sorted(self._groups.items()))

    def _start(self) -> bool:
        read_fd, write_fd = os.pipe()  # both non-inheritable
        try:
            start_watcher(read_fd, platform.LIFELINE)
        except OSError as error:
            os.close(write_fd)
            logger.warning("cannot start the lifeline watcher (%s); a killed program may leave commands running", error)
            return False
        finally:
            os.close(read_fd)
        os.set_blocking(write_fd, False)
        self._write_fd = write_fd
        logger.debug("lifeline watcher started")
        return True

    def _forget(self) -> None:
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None

    def after_fork(self) -> None:
        """In a forked child: let go of the parent's watcher (a fresh one starts at the child's first CLI)."""
        self._lock = threading.Lock()
        if self._write_fd is not None:
            os.close(self._write_fd)
        self._write_fd = None
        self._tags = set()
        self._groups = {}


_LIFELINE = _Lifeline()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LIFELINE.after_fork)


def watch(tag: str) -> None:
    """Stop the processes tagged ``tag`` if this program dies before :func:`release` (starts the watcher)."""
    if platform.LIFELINE != "job":
        _LIFELINE.watch(tag)


def started(tag: str, pid: int) -> None:
    """The CLI tagged ``tag`` runs as process ``pid`` (the leader of its own group): tie it to this program where
    the tag alone does not find it (macOS: the watcher is told its group; Windows: a Job Object)."""
    match platform.LIFELINE:
        case "tags":
            return
        case "groups":
            _LIFELINE.group(tag, pid)
        case "job":
            try:
                platform.tie_to_program(tag, pid)
            except OSError as error:
                logger.warning(
                    "cannot tie the CLI %d to this program (%s); a killed program may leave it running", pid, error
                )
        case other:
            raise AssertionError(f"unknown lifeline {other!r}")


def release(tag: str) -> None:
    """The processes tagged ``tag`` were stopped: the watcher forgets them."""
    if platform.LIFELINE != "job":
        _LIFELINE.release(tag)
