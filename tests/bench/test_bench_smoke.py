"""Smoke test of the benchmark command: one quick row, end to end, in a subprocess (no timing assertions)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._support.subprocesses import run_python

pytestmark = pytest.mark.timeout(60)  # a few seconds normally: one quick row, no Claude Code CLI

ROOT = Path(__file__).resolve().parents[2]


def test_bench_prints_a_row_with_a_ratio_and_writes_json(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    completed = run_python(
        "-m", "bench", "--repeat", "1", "--only", "bridge-spawn", "--json", str(report), cwd=ROOT, timeout=60
    )

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    header = next(line for line in lines if line.startswith("benchmark"))
    assert "ours / raw" in header
    assert "target" in header
    assert "CLIs held (max) ours/raw" in header
    assert "RSS (max, MiB) ours/raw" in header
    [row] = [line for line in lines if line.startswith("bridge spawn -> ready")]
    # ours, raw, their ratio and its per-repetition range, the CLIs held and their RSS (none: no CLI in this row),
    # then the target and its verdict
    number = r"\d+(\.\d+)? (us|ms|s)"
    ratio = r"\d+\.\d\d x +\d+\.\d\d-\d+\.\d\d"
    assert re.search(rf"{number} +{number} +{ratio} +0 / 0 +0 / 0 +<= 0\.3 s", row), row
    assert row.rstrip().endswith(("yes", "NO"))

    document = json.loads(report.read_text())
    [data] = document["rows"]
    assert data["key"] == "bridge-spawn"
    assert data["ours"] > 0
    assert data["raw"] > 0
    assert data["ratio"] == data["ours"] / data["raw"]
    assert len(document["suites"][0]["samples"]["ours.ready"]) == 1
    assert document["suites"][0]["samples"]["ours.clis_max"] == [0]
    assert data["clis"] == [0, 0]
    assert document["sampler"]["samples"] > 0
    assert "process sampler:" in completed.stdout
