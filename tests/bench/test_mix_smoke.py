"""Smoke test of the mix suite: one round of each contender's program, end to end (no timing assertions): every row
carries the CLIs held and their RSS, and the JSON keeps the samples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bench._mix_suites import STEPS
from bench._process_suites import peer_installed

from tests._support.subprocesses import run_python

pytestmark = [pytest.mark.cli, pytest.mark.timeout(300)]  # about a minute: 2 rounds of 2-3 programs

ROOT = Path(__file__).resolve().parents[2]


def test_one_round_of_the_mix_shows_the_clis_held_and_their_memory(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    completed = run_python(
        "-m", "bench", "--repeat", "1", "--only", "mix", "--json", str(report),
        cwd=ROOT, env={"BENCH_MIX_PAUSE": "0.3"}, timeout=280,
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr[-3000:]
    document = json.loads(report.read_text())
    rows = {row["key"]: row for row in document["rows"]}
    contenders = ["raw", "peer"] if peer_installed() else ["raw"]
    for other in contenders:
        for step in STEPS:
            row = rows[f"mix-{step.replace('_', '-')}-{other}"]
            assert row["ours"] > 0
            assert row["raw"] > 0
            assert row["clis"][0] >= 1  # ours held a CLI, and so did the other program
            assert row["clis"][1] >= 1
            assert row["rss_mib"][0] > 50
            assert row["rss_mib"][1] > 50
        assert rows[f"mix-clis-{other}"]["ours"] == rows[f"mix-clis-{other}"]["clis"][0]
    if not peer_installed():
        assert not [key for key in rows if key.endswith("-peer")]
    [suite] = document["suites"]
    assert suite["samples"]["ours.clis_max"][0] >= 1
    assert len(suite["samples"]["ours.clis_after_follow_up"]) == 1
    assert suite["process_series"]["ours"][0]  # every sample of the round
    table = completed.stdout.splitlines()
    header = next(line for line in table if line.startswith("benchmark"))
    assert "CLIs held (max) ours/raw" in header
    [line] = [line for line in table if line.startswith("mix: follow-up of the text agent's conversation vs raw")]
    assert re.search(r" \d+ / \d+ +\d+ / \d+ +", line), line
