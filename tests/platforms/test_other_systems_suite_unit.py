"""The test suite elsewhere than Linux: the process table read with ``ps`` where there is no ``/proc`` (the leak
guard of every test needs it), and which test modules are skipped there, and why."""

from __future__ import annotations

import os

from tests._support import processes
from tests._support.platforms import linux_only_reason


def test_ps_gives_the_same_table_as_proc_for_this_process_and_its_parent():
    by_proc = {entry.pid: entry for entry in processes.process_table() if entry.pid in (os.getpid(), os.getppid())}
    by_ps = {entry.pid: entry for entry in processes.ps_table() if entry.pid in (os.getpid(), os.getppid())}

    assert set(by_ps) == set(by_proc) == {os.getpid(), os.getppid()}
    for pid, entry in by_proc.items():
        seen = by_ps[pid]
        assert (seen.ppid, seen.pgid, seen.alive) == (entry.ppid, entry.pgid, entry.alive)
        assert seen.argv[0] == entry.argv[0]


def test_modules_that_read_proc_or_need_namespaces_are_the_linux_only_ones():
    assert linux_only_reason('state = Path(f"/proc/{pid}/stat").read_text()') == "Linux only: reads Linux's /proc"
    assert linux_only_reason('for entry in os.listdir("/proc"):') == "Linux only: reads Linux's /proc"
    assert linux_only_reason('command = ["setpriv", "--reuid=65534"]') == (
        "Linux only: runs util-linux setpriv or unshare (Linux namespaces)"
    )
    assert linux_only_reason('"""Nothing here reads /proc: text only."""\nimport os\n') is None
    assert linux_only_reason("from tests._support.processes import live_descendants") is None
