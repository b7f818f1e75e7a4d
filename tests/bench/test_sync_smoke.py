"""Smoke test of the sync suite: one round of each program, end to end (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench._sync_suites import CALLS

from tests._support.subprocesses import run_python

pytestmark = [pytest.mark.cli, pytest.mark.timeout(300)]  # about a minute: 2 rounds of 3 programs

ROOT = Path(__file__).resolve().parents[2]


def test_one_round_of_the_run_sync_programs(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    completed = run_python(
        "-m", "bench", "--repeat", "1", "--only", "sync", "--json", str(report),
        cwd=ROOT, env={"BENCH_SYNC_PAUSE": "0.3"}, timeout=280,
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr[-3000:]
    document = json.loads(report.read_text())
    rows = {row["key"]: row for row in document["rows"]}
    assert set(rows) == {"sync-new", "sync-new-raw", "sync-second", "sync-clis"}
    for key in ("sync-new", "sync-new-raw", "sync-second"):
        assert rows[key]["ours"] > 0
        assert rows[key]["raw"] > 0
    [suite] = document["suites"]
    samples = suite["samples"]
    assert 0 <= samples["ours.on_spare"][0] <= CALLS - 2
    assert samples["fresh.on_spare"] == [0.0]  # spare_sessions=0: every conversation a new CLI
    assert samples["raw.on_spare"] == [0.0]
    assert 1 <= rows["sync-clis"]["ours"] <= 3
