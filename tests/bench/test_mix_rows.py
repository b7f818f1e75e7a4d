"""The mix and lean suites' rows from given medians (no process started): each step against the peer and the raw
SDK with the issue's targets, the CLIs and RSS the programs held, and the peer's rows only when the peer ran."""

from __future__ import annotations

import math

import pytest
from bench._core import Row
from bench._lean_suites import LeanSuite
from bench._mix_suites import STEPS, MixSuite

STEP_SECONDS = {"tool": 1.2, "text": 0.4, "follow_up": 0.1, "new_conversation": 0.15, "new_model": 0.6}


def medians(*contenders: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for index, contender in enumerate(("ours", *contenders)):
        scale = 1.0 + index  # the others take longer here
        for step in STEPS:
            values[f"{contender}.{step}"] = STEP_SECONDS[step] * scale
            values[f"{contender}.clis_after_{step}"] = 2.0 if contender == "ours" else 0.0
        values[f"{contender}.clis_max"] = 3.0 if contender == "ours" else 1.0
        values[f"{contender}.rss_max_mib"] = 700.0 if contender == "ours" else 250.0
        values[f"{contender}.program_rss_max_mib"] = 800.0
    return values


def by_key(rows: list[Row]) -> dict[str, Row]:
    return {row.key: row for row in rows}


def test_each_step_is_compared_with_the_peer_and_the_raw_sdk_with_the_issue_targets() -> None:
    suite = MixSuite()
    suite._with_peer = True

    rows = by_key(suite.rows(medians("raw", "peer")))

    assert set(rows) == set(suite.row_names)
    follow_up = rows["mix-follow-up-peer"]
    assert (follow_up.ours, follow_up.raw) == (0.1, pytest.approx(0.3))
    assert follow_up.pair == ("ours.follow_up", "peer.follow_up")
    assert (follow_up.target.limit, follow_up.met) == (0.2, False)  # 0.33 x the peer
    assert rows["mix-new-conversation-peer"].target.limit == 0.3
    assert rows["mix-new-model-peer"].target.limit == 0.9
    assert rows["mix-new-conversation-raw"].target.limit == 0.2
    assert rows["mix-tool-raw"].target.limit is None
    clis = rows["mix-clis-peer"]
    assert (clis.ours, clis.raw, clis.checked_figure, clis.met) == (3.0, 1.0, 3.0, True)
    rss = rows["mix-rss-peer"]
    assert (rss.ours, rss.checked_figure, rss.met) == (700.0, 700.0, True)
    assert rows["mix-clis-raw"].met is None  # the targets are on the peer's rows when the peer ran


def test_without_the_peer_its_rows_are_left_out_and_the_bounds_move_to_the_raw_rows() -> None:
    rows = by_key(MixSuite().rows(medians("raw")))

    assert not [key for key in rows if key.endswith("-peer")]
    assert rows["mix-clis-raw"].target.limit == 3
    assert rows["mix-rss-raw"].target.limit == 750


def test_the_lean_rows_hold_the_cli_bound_and_the_return_after_a_burst() -> None:
    values = {
        "seq.clis_during": 16.0,
        "seq.per_conversation": 0.4,
        "seq.rss_during": 3300.0,
        "burst.back_within": 75.0,
        "burst.came_back": 0.0,
        "burst.clis_during": 16.0,
        "burst.rss_during": 3100.0,
        "burst.wall": 12.0,
    }

    rows = by_key(LeanSuite().rows(values))

    assert (rows["seq-50"].checked_figure, rows["seq-50"].met) == (16.0, False)
    assert rows["burst-16"].checked_figure == math.inf
    assert rows["burst-16"].figure_text == "> 75 s"
    assert rows["burst-16"].met is False
    back = by_key(LeanSuite().rows({**values, "burst.back_within": 12.5, "burst.came_back": 1.0}))["burst-16"]
    assert (back.checked_figure, back.met) == (12.5, True)
