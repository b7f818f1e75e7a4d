"""The new-process suite's rows from given samples (no process started): the floors are what the processes without
this library measured, repetition by repetition, and the peer's rows are there only when the peer ran."""

from __future__ import annotations

import statistics

import pytest
from bench._core import paired_ratio_range
from bench._process_suites import NewProcessSuite

SAMPLES = {
    "ours.total": [2.0, 2.2, 2.4],
    "ours.call": [1.2, 1.3, 1.4],
    "ours.ready": [0.8, 0.9, 1.0],
    "ours.cpu": [1.0, 1.1, 1.2],
    "ours.cpu_call": [0.5, 0.6, 0.7],
    "sequential.call": [1.6, 1.7, 1.8],
    "eager.call": [0.9, 1.0, 1.1],
    "eager.total": [2.3, 2.5, 2.7],
    "raw.total": [1.5, 1.6, 1.7],
    "raw.call": [0.6, 0.7, 0.8],
    "raw.ready": [0.9, 0.9, 0.9],
    "raw.cpu": [0.8, 0.8, 0.8],
    "raw.cpu_call": [0.1, 0.2, 0.3],
    "floor.ready": [0.7, 0.8, 0.9],
    "floor.first_run": [0.05, 0.05, 0.05],
    "floor.sdk_import": [0.5, 0.6, 0.7],
    "floor.cpu": [0.9, 0.9, 1.0],
    "peer.total": [1.2, 1.3, 1.4],
    "peer.call": [0.7, 0.8, 0.9],
    "peer.ready": [0.5, 0.5, 0.5],
    "peer.cpu": [0.6, 0.6, 0.6],
    "peer.cpu_call": [0.2, 0.2, 0.2],
}


def rows_of(suite: NewProcessSuite, samples: dict[str, list[float]]) -> dict[str, tuple[float, float | None]]:
    samples = {**samples, **suite.derived(samples)}
    medians = {key: statistics.median(values) for key, values in samples.items()}
    return {row.key: (row.ours, row.raw) for row in suite.rows(medians)}


def test_the_floors_add_what_the_process_without_the_library_took_in_each_repetition():
    derived = NewProcessSuite().derived(SAMPLES)

    assert derived["least.call"] == pytest.approx([0.6 + 0.5 + 0.05, 0.7 + 0.6 + 0.05, 0.8 + 0.7 + 0.05])
    assert derived["least.total"] == pytest.approx([0.7 + 1.15, 0.8 + 1.35, 0.9 + 1.55])
    assert derived["least.cpu"] == pytest.approx([0.9 + 0.1, 0.9 + 0.2, 1.0 + 0.3])
    assert paired_ratio_range(SAMPLES["ours.call"], derived["least.call"]) == pytest.approx((1.4 / 1.55, 1.2 / 1.15))


def test_each_row_compares_the_medians_it_names():
    suite = NewProcessSuite()
    suite._with_peer = True

    rows = rows_of(suite, SAMPLES)

    assert rows["new-first-call"] == (1.3, 0.7)
    assert rows["new-first-call-overlap"] == (1.3, 1.7)
    assert rows["new-first-call-eager"] == (1.0, 0.7)
    assert rows["new-answer-eager"] == (2.2, 2.5)
    assert rows["new-first-call-floor"] == (1.3, pytest.approx(1.35))
    assert rows["new-first-call-floor-raw"] == (pytest.approx(1.35), 0.7)
    assert rows["new-first-call-floor-peer"] == (pytest.approx(1.35), 0.8)
    assert rows["new-answer"] == (2.2, 1.6)
    assert rows["new-answer-floor"] == (2.2, pytest.approx(2.15))
    assert rows["new-answer-floor-raw"] == (pytest.approx(2.15), 1.6)
    assert rows["new-answer-floor-peer"] == (pytest.approx(2.15), 1.3)
    assert rows["new-ready-framework"] == (0.9, 0.8)
    assert rows["new-first-call-peer"] == (1.3, 0.8)
    assert rows["new-answer-peer"] == (2.2, 1.3)
    assert rows["new-cpu-floor"] == (1.1, pytest.approx(1.1))
    assert rows["new-cpu-peer"] == (1.1, 0.6)
    assert set(rows) == set(suite.row_names)


def test_without_the_peer_its_rows_are_left_out():
    samples = {key: values for key, values in SAMPLES.items() if not key.startswith("peer.")}

    rows = rows_of(NewProcessSuite(), samples)

    assert not [key for key in rows if key.endswith("-peer")]
    assert "new-first-call" in rows
