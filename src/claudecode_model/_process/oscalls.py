"""The process calls the rest of the package uses to start, find and stop a CLI's processes: the platform layer's
(:mod:`claudecode_model._process.platform`), under the names the package has always imported them by.

A CLI's *processes* are the CLI itself, its own process group, and every process carrying its tag
(:data:`CLI_TAG_VARIABLE`, inherited by the commands of its built-in tools); see
:mod:`claudecode_model._process.platform.posix` for how they are found and why the calls are safe against pid reuse,
and :mod:`claudecode_model._process.platform.windows` for Windows, where a Job Object holds them.
"""

from __future__ import annotations

from claudecode_model._process.platform import (
    CLI_TAG_VARIABLE,
    own_session_options,
    process_alive,
    process_exited,
    process_exiting,
    reaped,
    signal_group,
    signal_process,
    signal_tagged,
    stop_child,
    stop_tagged,
)

__all__ = [
    "CLI_TAG_VARIABLE",
    "own_session_options",
    "process_alive",
    "process_exited",
    "process_exiting",
    "reaped",
    "signal_group",
    "signal_process",
    "signal_tagged",
    "stop_child",
    "stop_tagged",
]
