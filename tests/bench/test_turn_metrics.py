"""The agent suite's per-call slope from given laps (no process started): the median of the pairs' slopes, so that
one slow turn moves neither the slope nor the follow-up figure."""

from __future__ import annotations

import pytest
from bench._core import Lap, turn_metrics

COLD = Lap(wall=0.5, cpu=0.03)


def test_slope_is_the_median_of_the_pairs_slopes() -> None:
    one = [Lap(0.08, 0.020), Lap(0.09, 0.021), Lap(0.10, 0.022), Lap(0.08, 0.020)]
    many = [Lap(0.58, 0.120), Lap(0.49, 0.111), Lap(0.70, 0.142), Lap(0.58, 0.110)]

    metrics = turn_metrics(COLD, one, many, 10)

    # pair slopes 50, 40, 60, 50 ms: the median is 50 ms; CPU 10, 9, 12, 9 ms: 9.5 ms
    assert metrics["slope"] == pytest.approx(0.050)
    assert metrics["cpu_slope"] == pytest.approx(0.0095)
    assert metrics["cold"] == 0.5
    assert metrics["cpu_cold"] == 0.03


def test_one_slow_turn_moves_neither_the_slope_nor_the_follow_up() -> None:
    one = [Lap(0.08, 0.02)] * 4
    many = [Lap(0.58, 0.12)] * 3 + [Lap(3.0, 0.5)]  # a load spike in the last 11-call turn

    metrics = turn_metrics(COLD, one, many, 10)

    assert metrics["slope"] == pytest.approx(0.050)
    assert metrics["warm_many"] == pytest.approx(0.58)
    slow_one = [Lap(0.08, 0.02)] * 3 + [Lap(1.0, 0.02)]
    assert turn_metrics(COLD, slow_one, [Lap(0.58, 0.12)] * 4, 10)["warm"] == pytest.approx(0.08)


def test_laps_are_paired_in_the_order_they_ran() -> None:
    with pytest.raises(ValueError):
        turn_metrics(COLD, [Lap(0.08, 0.02)] * 2, [Lap(0.58, 0.12)], 10)
