"""The pure text rules of the tool output cache: lines, numbering, truncation, read and grep."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudecode_model.toolkit import (
    grep_output,
    read_output,
    trimmed_marker,
    truncate_tool_output,
    truncated_marker,
)
from claudecode_model.toolkit._text import number_line, split_lines, truncated_ref, utf8_size

pytestmark = pytest.mark.filterwarnings("error")

REF = "out_01jd6x4m0c9v7k2q8s3t5w6y7z"
MARKER = f"[tool output truncated; ref={REF}]"


def test_markers() -> None:
    assert truncated_marker(REF) == MARKER
    assert trimmed_marker(REF) == f"[tool output trimmed; ref={REF}]"
    assert truncated_ref(f"a\nb\n{MARKER}") == REF
    assert truncated_ref(f"{MARKER}\nmore") is None


def test_split_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert split_lines("a\r\nb\r\n") == ["a", "b"]
    assert split_lines("\n") == [""]
    # Only \n splits: other Unicode line separators stay inside a line, so read and grep agree.
    assert split_lines("a\u2028b\x0bc") == ["a\u2028b\x0bc"]


@pytest.mark.parametrize(
    ("number", "expected"),
    [(1, "    1  x"), (42, "   42  x"), (12345, "12345  x"), (123456, "123456  x")],
)
def test_number_width(number: int, expected: str) -> None:
    assert number_line(number, "x") == expected


def test_number_match_marker() -> None:
    assert number_line(7, "hit", match=True) == "    7: hit"


# --- truncation ------------------------------------------------------------------------------------------


def test_fitting_output_is_unchanged() -> None:
    text = "abc\ndef\n"
    assert truncate_tool_output(text, REF, max_bytes=len(text)) == text
    assert truncate_tool_output("", REF, max_bytes=1) == ""


def test_truncation_keeps_whole_lines_and_ends_with_marker() -> None:
    text = "".join(f"line {i}\n" for i in range(100))  # 7 or 8 bytes per line
    out = truncate_tool_output(text, REF, max_bytes=40)
    assert out == "line 0\nline 1\nline 2\nline 3\nline 4\n" + MARKER


def test_truncation_budget_counts_utf8_bytes() -> None:
    text = "ééé\nb\nc\n"  # first line: 6 bytes + newline
    assert truncate_tool_output(text, REF, max_bytes=8) == "ééé\n" + MARKER
    assert truncate_tool_output(text, REF, max_bytes=6) == "ééé\n" + MARKER  # cut inside: 3 chars fit exactly


def test_line_that_exactly_fills_the_budget_is_kept() -> None:
    assert truncate_tool_output("aaaa\nbbbb\n", REF, max_bytes=5) == "aaaa\n" + MARKER
    assert truncate_tool_output("aaaa\nbbbb\n", REF, max_bytes=9) == "aaaa\n" + MARKER


def test_single_line_longer_than_budget_keeps_a_prefix_cut_between_characters() -> None:
    assert truncate_tool_output("x" * 100, REF, max_bytes=10) == "x" * 10 + "\n" + MARKER
    # "é" is two bytes: a budget of 5 holds "aé" + one byte of the next "é", which is dropped.
    assert truncate_tool_output("aéééé", REF, max_bytes=4) == "aé\n" + MARKER
    assert truncate_tool_output("aéééé\nshort", REF, max_bytes=4) == "aé\n" + MARKER
    assert truncate_tool_output("\ud800\ud800", REF, max_bytes=4) == "\ud800\n" + MARKER  # lone surrogates


def test_truncation_rejects_a_non_positive_budget() -> None:
    with pytest.raises(ValueError, match="positive"):
        truncate_tool_output("abc", REF, max_bytes=0)


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=30), max_size=40),
    st.integers(min_value=1, max_value=200),
)
def test_truncation_properties(lines: list[str], budget: int) -> None:
    text = "\n".join(lines)
    out = truncate_tool_output(text, REF, max_bytes=budget)
    if utf8_size(text) <= budget:
        assert out == text
        return
    assert out.endswith("\n" + MARKER)
    kept = out[: -len(MARKER)]
    assert utf8_size(kept) <= budget + 1  # + the newline added after a cut line
    assert text.startswith(kept.removesuffix("\n"))
    whole = kept.removesuffix("\n").split("\n")
    if len(whole) > 1 or text.startswith(kept):
        # Whole lines were kept: the next line did not fit.
        assert text.startswith(kept)
        next_line = text[len(kept) :].split("\n")[0]
        assert utf8_size(kept) + utf8_size(next_line) + 1 > budget


# --- read ------------------------------------------------------------------------------------------------

TEXT = "alpha\nbeta\ngamma\ndelta\nepsilon\n"


def test_read_numbers_from_one() -> None:
    assert read_output(TEXT) == "    1  alpha\n    2  beta\n    3  gamma\n    4  delta\n    5  epsilon"


def test_read_offset_is_zero_based_and_limit_counts_lines() -> None:
    assert read_output(TEXT, offset=1, limit=2) == "    2  beta\n    3  gamma"
    assert read_output(TEXT, offset=4) == "    5  epsilon"
    assert read_output(TEXT, offset=3, limit=100) == "    4  delta\n    5  epsilon"


def test_read_past_the_end() -> None:
    assert read_output(TEXT, offset=5) == "No lines at offset 5 (the output has 5 lines)"
    assert read_output("", offset=0) == "No lines at offset 0 (the output has 0 lines)"


def test_read_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="offset"):
        read_output(TEXT, offset=-1)
    with pytest.raises(ValueError, match="limit"):
        read_output(TEXT, limit=0)


# --- grep ------------------------------------------------------------------------------------------------

LOG = "\n".join(
    [
        "start",  # 1
        "error: a.c failed",  # 2
        "ok",  # 3
        "abc",  # 4
        "ERROR upper",  # 5
        "ok",  # 6
        "ok",  # 7
        "error: again",  # 8
        "end",  # 9
    ]
)


def test_grep_literal_is_case_sensitive_and_not_a_regex() -> None:
    assert grep_output(LOG, "a.c") == "    2: error: a.c failed"
    assert grep_output(LOG, "error") == "    2: error: a.c failed\n    8: error: again"


def test_grep_regex() -> None:
    assert grep_output(LOG, "a.c", regex=True) == "    2: error: a.c failed\n    4: abc"
    assert grep_output(LOG, "(?i)^error", regex=True) == (
        "    2: error: a.c failed\n    5: ERROR upper\n    8: error: again"
    )


def test_grep_invalid_regex_raises() -> None:
    with pytest.raises(re.error):
        grep_output(LOG, "(unclosed", regex=True)
    assert grep_output(LOG, "(unclosed") == "No matches for: (unclosed"  # literal: just text


def test_grep_context_blocks_are_separated_and_clamped() -> None:
    assert grep_output(LOG, "start", after=1) == "    1: start\n    2  error: a.c failed"
    assert grep_output(LOG, "end", before=2) == "    7  ok\n    8  error: again\n    9: end"
    assert grep_output(LOG, "error", before=1, after=1) == (
        "    1  start\n    2: error: a.c failed\n    3  ok\n--\n    7  ok\n    8: error: again\n    9  end"
    )


def test_grep_overlapping_windows_are_not_merged() -> None:
    text = "a\nhit 1\nhit 2\nb"
    assert grep_output(text, "hit", after=1) == ("    2: hit 1\n    3: hit 2\n--\n    3: hit 2\n    4  b")


def test_grep_max_matches_and_truncated_marker() -> None:
    text = "\n".join(f"row {i}" for i in range(1, 11))
    assert grep_output(text, "row", max_matches=3) == "    1: row 1\n    2: row 2\n    3: row 3\n... (truncated)"
    assert grep_output(text, "row 1", max_matches=2) == "    1: row 1\n   10: row 10"  # exactly 2: no marker
    assert grep_output(text, "row", max_matches=50).count("\n") == 9


def test_grep_no_matches() -> None:
    assert grep_output(LOG, "warning") == "No matches for: warning"
    assert grep_output("", "x") == "No matches for: x"


def test_grep_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="before"):
        grep_output(LOG, "x", before=-1)
    with pytest.raises(ValueError, match="max_matches"):
        grep_output(LOG, "x", max_matches=0)
