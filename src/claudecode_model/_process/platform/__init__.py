"""The platform layer: every call that differs between Linux, macOS and Windows, and the only place the package
sends a signal, waits for a child, reads ``/proc`` or asks the uid (``tests/platforms/test_platform_layer.py`` checks
it).

One module per platform, each with the same names: :mod:`.linux` and :mod:`.darwin` (both on :mod:`.posix`, which also
runs as the lifeline watcher; Linux's CLI launcher is :mod:`.linux_launcher`, which only :mod:`.linux` imports) and
:mod:`.windows` (its Windows API behind a seam that tests fake). The module is chosen by ``sys.platform`` when this
package is first imported, and its names are re-exported here; the rest of the package imports them from here (or from
:mod:`claudecode_model._process.oscalls`). It imports nothing of the package outside this folder, so the foundation
(``ipc/``) may use it too.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":
    from claudecode_model._process.platform import windows as current
elif sys.platform == "darwin":
    from claudecode_model._process.platform import darwin as current
else:
    from claudecode_model._process.platform import linux as current

__all__ = [
    "CLI_BINARY",
    "CLI_TAG_VARIABLE",
    "LIFELINE",
    "LOGIN_IN_KEYCHAIN",
    "MAX_SOCKET_PATH",
    "NAME",
    "UNIX_SOCKETS",
    "available_memory_mb",
    "current",
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

NAME = current.NAME
"""The platform whose branch runs: ``"linux"`` (also any other POSIX system), ``"darwin"`` or ``"win32"``."""
CLI_BINARY = current.CLI_BINARY
CLI_TAG_VARIABLE = current.CLI_TAG_VARIABLE
LIFELINE = current.LIFELINE
LOGIN_IN_KEYCHAIN = current.LOGIN_IN_KEYCHAIN
MAX_SOCKET_PATH = current.MAX_SOCKET_PATH
UNIX_SOCKETS = current.UNIX_SOCKETS

available_memory_mb = current.available_memory_mb
event_loop_problem = current.event_loop_problem
guarded_cli_path = current.guarded_cli_path
is_locked = current.is_locked
lock_exclusive = current.lock_exclusive
own_session_options = current.own_session_options
owned_by_user = current.owned_by_user
peer_credentials = current.peer_credentials
process_alive = current.process_alive
process_exited = current.process_exited
process_exiting = current.process_exiting
reaped = current.reaped
seconds_since_process_start = current.seconds_since_process_start
signal_group = current.signal_group
signal_process = current.signal_process
signal_tagged = current.signal_tagged
stop_child = current.stop_child
stop_tagged = current.stop_tagged
tie_to_program = current.tie_to_program
user_id = current.user_id
