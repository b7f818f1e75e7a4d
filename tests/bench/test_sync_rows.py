"""The sync suite's figures from a program's report, and its rows from given medians (no process started)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from bench._brain import expected_answer
from bench._core import BenchError
from bench._sync_suites import CALLS, RUN_IDS, SyncSuite, call_metrics


def report(seconds: Sequence[float], sources: Sequence[str | None]) -> dict[str, Any]:
    calls, start = [], 0
    for run_id, took, source in zip(RUN_IDS, seconds, sources, strict=True):
        end = start + int(took * 1e9)
        calls.append({"start": start, "end": end, "text": expected_answer(calls=1, run_id=run_id), "source": source})
        start = end + 10**9
    return {"calls": calls}


def test_a_program_s_calls_give_its_first_second_and_head_started_times() -> None:
    seconds = [1.2, 0.6, 0.3, 0.2, 0.25, 0.4]
    sources = ["fresh", "spare", "spare", "spare", "fresh", "spare"]

    metrics = call_metrics(report(seconds, sources))

    assert metrics["first"] == pytest.approx(1.2)
    assert metrics["second"] == pytest.approx(0.6)
    assert metrics["new"] == pytest.approx(0.275)  # the median of the third call on
    assert metrics["on_spare"] == 3.0


def test_a_wrong_answer_or_a_missing_call_stops_the_suite() -> None:
    good = report([0.5] * CALLS, ["fresh"] * CALLS)
    wrong = {"calls": [dict(call) for call in good["calls"]]}
    wrong["calls"][3]["text"] = "done sync2: p0"

    with pytest.raises(BenchError, match="call sync3 answered"):
        call_metrics(wrong)
    with pytest.raises(BenchError, match="made 5 calls"):
        call_metrics({"calls": good["calls"][:-1]})


def test_the_rows_compare_the_head_started_calls_with_no_spares_and_the_raw_sdk() -> None:
    medians = {
        **{f"ours.{key}": value for key, value in {"first": 1.0, "second": 0.5, "new": 0.25}.items()},
        **{f"fresh.{key}": value for key, value in {"first": 1.0, "second": 0.5, "new": 0.5}.items()},
        **{f"raw.{key}": value for key, value in {"first": 0.9, "second": 0.6, "new": 0.6}.items()},
        "ours.on_spare": 4.0,
        "ours.clis_max": 3.0,
        "raw.clis_max": 1.0,
    }

    rows = {row.key: row for row in SyncSuite().rows(medians)}

    assert set(rows) == set(SyncSuite.row_names)
    new = rows["sync-new"]
    assert (new.ours, new.raw, new.pair) == (0.25, 0.5, ("ours.new", "fresh.new"))
    assert "on a spare: 4 of 4" in new.note
    assert rows["sync-new-raw"].pair == ("ours.new", "raw.new")
    assert rows["sync-second"].pair == ("ours.second", "fresh.second")
    clis = rows["sync-clis"]
    assert (clis.ours, clis.raw, clis.target.limit, clis.met) == (3.0, 1.0, 3, True)
