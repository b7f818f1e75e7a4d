"""Shared helpers of the offline-backend tests: no child process may outlive a test."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from a /proc scan (zombies excluded)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("State", "").startswith("Z"):
            continue
        parents[int(entry.name)] = int(fields.get("PPid", "0").strip() or 0)
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def wait_for_no_descendants(deadline_s: float = 10.0) -> set[int]:
    """Wait (bounded) until this process has no live descendants; returns the ones left."""
    end = time.monotonic() + deadline_s
    left = descendants(os.getpid())
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = descendants(os.getpid())
    return left


@pytest.fixture
def no_leaked_processes() -> Iterator[None]:
    """Fail the test if it leaves a child process behind."""
    before = descendants(os.getpid())
    yield
    left = wait_for_no_descendants() - before
    assert not left, f"child processes left behind: {sorted(left)}"
