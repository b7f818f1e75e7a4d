"""Smoke test of ``python -m bench.cli_memory``: one sample of a ready spare and of the parked CLI, end to end, in a
subprocess (the figures are checked for their shape and plausibility, not against the documented medians)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._support.processes import HAS_PROC
from tests._support.subprocesses import run_python

pytestmark = [
    pytest.mark.cli,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not HAS_PROC, reason="reads the CLI's memory from /proc"),
]

ROOT = Path(__file__).resolve().parents[2]


def test_the_memory_script_prints_a_row_per_variant() -> None:
    completed = run_python(
        "-m", "bench.cli_memory", "--samples", "1", "--only", "spare", "parked", cwd=ROOT, timeout=110
    )

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert re.match(r"CLI \d+\.\d+\.\d+ \(Claude Code\), 1 samples each", lines[0]), lines[0]
    rows = {line[:44].strip(): line[44:].split() for line in lines[2:]}
    assert list(rows) == ["spare", "initialized, not parked", "parked (--await-claim)"]
    for name, fields in rows.items():
        rss, anon, pss = float(fields[0]), float(fields[3]), float(fields[5])
        assert 50 < rss < 1000, (name, fields)  # MB: a live CLI, not a dead one or a runaway sum
        assert 0 < anon < rss, (name, fields)
        assert 0 < pss <= rss + 1, (name, fields)
        assert fields[-2] == "1", (name, fields)  # one CLI process measured
