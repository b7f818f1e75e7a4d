"""A private temp folder for each CLI process, removed when the process is gone, and the CLI's tag.

The CLI keeps sockets (``cc-socks``) and probes (``claude-<uid>``) under its temp dir and leaves them there. Each
CLI process this package starts gets a folder of its own as ``CLAUDE_CODE_TMPDIR`` (unless the user set one), named
``claudecode_cli_<owner pid>_<random>`` in the temp dir (``/tmp`` when the CLI's socket paths would not fit below
it) and removed once the process is gone. Folders whose owner died without removing them (killed) are removed when
a later CLI starts on the machine, together with the IPC folders of dead stdio sessions and the MCP config folders
of dead owners (:mod:`claudecode_model._process.mcp_config_file`), whether or not the user set the variable (at
most once every :data:`SWEEP_INTERVAL_SECONDS` per process).

A CLI started before its session exists (a new process's first one, :mod:`claudecode_model._sessions.early_cli`)
reserves its folder with :func:`reserve_cli_temp`: the next :func:`private_cli_temp` of the same task gets that
folder.

The same environment carries the CLI's tag (:data:`~claudecode_model._process.oscalls.CLI_TAG_VARIABLE`, unique to
each process), which the commands of its built-in tools inherit: what finds them when the CLI's processes are
stopped (:mod:`claudecode_model._process.oscalls`).
"""

from __future__ import annotations

import contextvars
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from claudecode_model._process.mcp_config_file import MCP_CONFIG_PREFIX
from claudecode_model._process.oscalls import CLI_TAG_VARIABLE
from claudecode_model.ipc._leftovers import directory_prefix, hold_owner_lock, release_owner_lock, remove_dead_leftovers

__all__ = [
    "CLI_TEMP_PREFIX",
    "SOCKET_PATH_ROOM",
    "SWEEP_INTERVAL_SECONDS",
    "TEMP_DIR_VARIABLE",
    "private_cli_temp",
    "sweep_dead_leftovers",
]

CLI_TEMP_PREFIX = "claudecode_cli_"
"""Prefix of a CLI process's private temp folder."""

TEMP_DIR_VARIABLE = "CLAUDE_CODE_TMPDIR"
"""Where the CLI puts its temp files (else under ``TMPDIR``)."""

SWEEP_INTERVAL_SECONDS = 60.0
"""How often a process looks for the folders of dead owners."""

_last_sweep = float("-inf")


SOCKET_PATH_ROOM = 60
"""Bytes the CLI's socket path takes below the temp dir (``claudecode_cli_<pid>_<random>/cc-socks/<pid>.sock``);
a Unix socket path has at most 108."""


@dataclass
class ReservedTemp:
    """A private temp folder made ahead of the CLI session that will own it (see :func:`reserve_cli_temp`)."""

    env: dict[str, str]
    remove: Callable[[], None]
    taken: bool = False
    """Whether a session took it (then the session removes it; else whoever reserved it)."""


_RESERVED: contextvars.ContextVar[ReservedTemp | None] = contextvars.ContextVar(
    "claudecode_model_reserved_cli_temp", default=None
)


def reserve_cli_temp(env: Mapping[str, str]) -> tuple[ReservedTemp, contextvars.Token[ReservedTemp | None]]:
    """:func:`private_cli_temp` for a CLI started early: the next call of :func:`private_cli_temp` in this context
    returns the same folder (reset the token when the reservation ends)."""
    temp_env, remove = private_cli_temp(env)
    reserved = ReservedTemp(temp_env, remove)
    return reserved, _RESERVED.set(reserved)


def end_reservation(token: contextvars.Token[ReservedTemp | None]) -> None:
    """End a reservation (the folder stays where it is: with the session that took it, or for its reserver)."""
    _RESERVED.reset(token)


def private_cli_temp(env: Mapping[str, str]) -> tuple[dict[str, str], Callable[[], None]]:
    """The environment that gives a new CLI process (started with ``env``) a private temp folder (none when the
    user chose the CLI's temp dir) and its tag, and the function that removes the folder. A folder reserved in this
    context (:func:`reserve_cli_temp`) is handed out once."""
    reserved = _RESERVED.get()
    if reserved is not None and not reserved.taken:
        reserved.taken = True
        return reserved.env, reserved.remove
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + SOCKET_PATH_ROOM > 107 and os.path.isdir("/tmp"):
        base = "/tmp"  # the CLI's sockets would not fit below the temp dir
    sweep_dead_leftovers(base)
    tag = {CLI_TAG_VARIABLE: f"{os.getpid()}-{secrets.token_hex(8)}"}
    if TEMP_DIR_VARIABLE in env or TEMP_DIR_VARIABLE in os.environ:
        return tag, _nothing
    path = tempfile.mkdtemp(prefix=directory_prefix(CLI_TEMP_PREFIX), dir=base)
    # Held until the folder is removed: a sweep that cannot see this process (another PID namespace sharing the temp
    # dir) still sees the folder is in use.
    lock = hold_owner_lock(path)

    def remove() -> None:
        release_owner_lock(lock)
        shutil.rmtree(path, ignore_errors=True)

    return {TEMP_DIR_VARIABLE: path, **tag}, remove


def sweep_dead_leftovers(base: str) -> None:
    """Remove the private folders of CLI processes, their MCP configs and IPC sessions whose owner died (at most
    once a while)."""
    global _last_sweep
    now = time.monotonic()
    if now - _last_sweep < SWEEP_INTERVAL_SECONDS:
        return
    _last_sweep = now
    remove_dead_leftovers(base, CLI_TEMP_PREFIX)
    remove_dead_leftovers(base)
    remove_dead_leftovers(tempfile.gettempdir(), MCP_CONFIG_PREFIX)


def _nothing() -> None:
    return None
