"""The Linux branch of the platform layer, on this machine: the memory the default cap counts (``MemAvailable``), the
process's start from ``/proc/self/stat``, the peer check through ``SO_PEERCRED``."""

from __future__ import annotations

import os
import socket
import sys
import time

import pytest

from claudecode_model._process.platform import linux

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux branch reads Linux's /proc")


def mem_available_mb() -> int:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        line = next(line for line in meminfo if line.startswith("MemAvailable:"))
    return int(line.split()[1]) // 1024


def test_the_default_cap_counts_the_available_memory():
    before = mem_available_mb()
    counted = linux.available_memory_mb()
    after = mem_available_mb()

    assert counted is not None
    assert min(before, after) - 64 <= counted <= max(before, after) + 64  # other processes allocate meanwhile


def test_the_process_start_is_read_from_the_kernel():
    since_start = linux.seconds_since_process_start()

    assert since_start is not None
    assert 0 < since_start < time.monotonic()


def test_the_peer_s_pid_and_uid_come_from_so_peercred():
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert linux.peer_credentials(left) == (os.getpid(), os.getuid())
