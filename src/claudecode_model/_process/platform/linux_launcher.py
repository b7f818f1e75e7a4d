"""A launcher that ties the CLI's life to this process: when Python dies, its CLI processes die with it.

A Claude Code CLI whose parent is killed (SIGKILL, the OOM killer, a crash: no ``atexit`` runs) would otherwise
finish its API request, run the tool calls and send another, paid, request. On Linux the launcher asks the kernel to
send the CLI SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), then execs the real CLI in the same process.

The signal fires when the *thread* that spawned the process ends. The SDK spawns the CLI from the event loop's
thread, and a CLI session lives no longer than its event loop, so that is the lifetime wanted.

The launcher is a two-line shell script around util-linux ``setpriv --pdeathsig KILL`` (about 1 ms), or, where
``setpriv`` is missing or too old, a small Python script calling ``prctl`` (about 20 ms of interpreter start). It
lives in the user's cache directory (``$XDG_CACHE_HOME/claudecode-model/launchers``, else ``~/.cache/...``), one file
per CLI path, written once and reused; the temp dir is used only where no cache directory can be created. Whether
``setpriv`` supports ``--pdeathsig`` is asked by running it once per ``setpriv`` binary (5-25 ms that would delay
every new process's first CLI start) and remembered in the same directory.

Linux only: a module of the platform layer imported by :mod:`.linux` alone, which exports :func:`guarded_cli_path`
(the other platforms' ``guarded_cli_path`` returns the CLI's own path).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from claudecode_model._process.platform.posix import owned_by_user, user_id

__all__ = ["guarded_cli_path"]

logger = logging.getLogger(__name__)

_PYTHON_LAUNCHER = """\
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
    sys.stderr.write("claudecode-model launcher: prctl failed; the CLI will not stop with its parent\\n")
os.execv({cli!r}, [{cli!r}, *sys.argv[1:]])
"""


def guarded_cli_path(cli_path: Path) -> Path:
    """A launcher for ``cli_path`` that stops the CLI when this process dies; ``cli_path`` itself where the
    launcher cannot be written."""
    try:
        return _launcher_for(str(cli_path), _setpriv())
    except OSError as error:
        logger.warning("cannot write the CLI launcher (%s); a CLI may outlive a killed Python process", error)
        return cli_path


@functools.cache
def _setpriv() -> str | None:
    """The ``setpriv`` binary if it supports ``--pdeathsig`` (util-linux 2.33+): asked once per binary, the answer
    remembered in the launcher directory (a changed binary is asked again)."""
    found = shutil.which("setpriv")
    if found is None:
        return None
    verdict = _verdict_path(found)
    if verdict is not None:
        with contextlib.suppress(OSError):
            return found if verdict.read_text() == "yes" else None
    try:
        works = subprocess.run(
            [found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None  # not remembered: it may work next time
    supported = works.returncode == 0
    if verdict is not None:
        with contextlib.suppress(OSError):
            _write_private(verdict, "yes" if supported else "no", mode=0o600)
    return found if supported else None


def _verdict_path(setpriv: str) -> Path | None:
    """Where the answer for this ``setpriv`` binary (its path, inode, size and mtime) is remembered, if anywhere."""
    try:
        info = os.stat(setpriv)
        directory = _private_dir()
    except OSError:
        return None
    identity = f"{setpriv}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"
    return directory / f"setpriv-pdeathsig-{hashlib.sha256(identity.encode()).hexdigest()[:20]}"


def _script(cli: str, setpriv: str | None) -> str:
    if setpriv is not None:
        return f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(cli)} "$@"\n'
    return f"#!{sys.executable} -SE\n" + _PYTHON_LAUNCHER.format(cli=cli)


@functools.cache
def _launcher_for(cli: str, setpriv: str | None) -> Path:
    directory = _private_dir()
    content = _script(cli, setpriv)
    name = hashlib.sha256(content.encode()).hexdigest()[:20]
    path = directory / f"claude-{name}"
    try:
        if path.read_text() == content and os.access(path, os.X_OK):
            return path
    except OSError:
        pass
    _write_private(path, content, mode=0o700)
    logger.debug("CLI launcher %s written for %s", path, cli)
    return path


def _write_private(path: Path, content: str, *, mode: int) -> None:
    """Write ``path`` whole or not at all (through a staging file in the same directory)."""
    staging = path.parent / f".{path.name}.{os.getpid()}"
    staging.write_text(content)
    staging.chmod(mode)
    os.replace(staging, path)


def _private_dir() -> Path:
    """A directory owned by this user and closed to others (refused otherwise): in the user's cache directory, so
    that no file is left in the temp dir, or ``<tmp>/claudecode-launch-<uid>`` where there is no usable cache."""
    cache_root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    directory = cache_root / "claudecode-model" / "launchers"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        directory = Path(tempfile.gettempdir()) / f"claudecode-launch-{user_id()}"
        directory.mkdir(mode=0o700, exist_ok=True)
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or not owned_by_user(info) or info.st_mode & 0o077:
        raise OSError(f"{directory} is not a private directory of this user")
    return directory
