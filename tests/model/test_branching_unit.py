"""Unit tests of where a turn goes on from, aborted attempts, the session ledger and transcript points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from claudecode_model._history.details import HISTORY_DIGEST_KEY, RESUME_AT_KEY
from claudecode_model._history.digest import history_digest
from claudecode_model._history.ledger import SessionLedger
from claudecode_model._history.plan import SessionPoint, TurnPlan, plan_turn
from claudecode_model._history.source import (
    ForkSession,
    FreshSession,
    LiveSession,
    ReplayHistory,
    ResumeSession,
    SessionSource,
    choose_source,
)
from claudecode_model._history.transcripts import TranscriptFiles
from claudecode_model._stream.attempts import AttemptTracker


@pytest.fixture
def files(tmp_path: Path) -> TranscriptFiles:
    return TranscriptFiles(env={"CLAUDE_CONFIG_DIR": str(tmp_path)}, cwd=str(tmp_path / "work"))


def write_transcript(files: TranscriptFiles, session_id: str, entries: list[tuple[str, str | None]]) -> Path:
    path = files.path(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"type": kind, "uuid": uuid}) for kind, uuid in entries) + "\n")
    return path


def continued_plan() -> TurnPlan:
    first = ModelRequest(parts=[UserPromptPart("one")])
    response = ModelResponse(parts=[TextPart("reply")], provider_name="claude-code")
    response.provider_details = {
        "session_id": "s-1",
        HISTORY_DIGEST_KEY: history_digest([first, response]),
        RESUME_AT_KEY: "a-1",
    }
    return plan_turn([first, response, ModelRequest(parts=[UserPromptPart("two")])], None)


# --- choose_source ----------------------------------------------------------------------------------------------


def test_a_live_session_that_saw_exactly_the_history_goes_on(files: TranscriptFiles):
    plan = continued_plan()
    taken: list[SessionPoint] = []

    def take_live(point: SessionPoint) -> str:
        taken.append(point)
        return "live"

    source = choose_source(plan, take_live=take_live, in_use=lambda _: True, files=files)

    assert source == LiveSession("live")
    assert taken == [plan.point]


def test_a_transcript_ending_at_the_point_is_resumed_when_unused(files: TranscriptFiles):
    write_transcript(
        files, "s-1", [("user", "u-1"), ("assistant", "a-1"), ("attachment", "x-1"), ("last-prompt", None)]
    )

    source: SessionSource[str] = choose_source(
        continued_plan(), take_live=lambda _: None, in_use=lambda _: False, files=files
    )

    assert source == ResumeSession("s-1")


def test_a_transcript_in_use_is_branched_not_resumed(files: TranscriptFiles):
    write_transcript(files, "s-1", [("user", "u-1"), ("assistant", "a-1")])

    source: SessionSource[str] = choose_source(
        continued_plan(), take_live=lambda _: None, in_use=lambda sid: sid == "s-1", files=files
    )

    assert source == ForkSession("s-1", "a-1")


def test_a_point_a_rewind_here_cut_off_is_replayed_though_the_transcript_was_read_before_the_cut(
    files: TranscriptFiles,
):
    write_transcript(files, "s-1", [("user", "u-1"), ("assistant", "a-1")])  # as read just before the cut
    ledger = SessionLedger()
    ledger.cut("s-1", ["a-1"])

    source: SessionSource[str] = choose_source(
        continued_plan(), take_live=lambda _: None, in_use=lambda _: True, files=files, was_cut=ledger.was_cut
    )

    assert isinstance(source, ReplayHistory)
    assert not ledger.was_cut("s-1", "a-2")
    assert not ledger.was_cut("s-2", "a-1")


def test_a_transcript_that_grew_past_the_point_is_branched(files: TranscriptFiles):
    write_transcript(files, "s-1", [("user", "u-1"), ("assistant", "a-1"), ("user", "u-2"), ("assistant", "a-2")])

    source: SessionSource[str] = choose_source(
        continued_plan(), take_live=lambda _: None, in_use=lambda _: False, files=files
    )

    assert source == ForkSession("s-1", "a-1")


@pytest.mark.parametrize("entries", [None, [("user", "u-1"), ("assistant", "other")]])
def test_a_missing_transcript_or_point_means_a_replay(files: TranscriptFiles, entries: list | None):
    if entries is not None:
        write_transcript(files, "s-1", entries)

    source: SessionSource[str] = choose_source(
        continued_plan(), take_live=lambda _: None, in_use=lambda _: False, files=files
    )

    assert isinstance(source, ReplayHistory)
    assert [entry.role for entry in source.entries] == ["user", "assistant"]


def test_no_history_is_a_fresh_session(files: TranscriptFiles):
    plan = plan_turn([ModelRequest(parts=[UserPromptPart("hi")])], None)

    assert choose_source(plan, take_live=lambda _: None, in_use=lambda _: False, files=files) == FreshSession()


# --- the ledger -------------------------------------------------------------------------------------------------


def test_an_owned_transcript_is_removed_when_its_last_use_ends(files: TranscriptFiles):
    path = write_transcript(files, "r-1", [("user", "u-1")])
    (path.with_suffix("") / "tool-results").mkdir(parents=True)
    ledger = SessionLedger()
    session_use = ledger.use("r-1")
    branch_use = ledger.use("r-1")
    ledger.own("r-1", path)

    session_use()
    session_use()  # ending a use twice counts once
    assert ledger.in_use("r-1")
    assert path.exists()
    branch_use()

    assert not ledger.in_use("r-1")
    assert not path.exists()
    assert not path.with_suffix("").exists()


def test_an_unused_owned_transcript_is_removed_at_once(files: TranscriptFiles):
    path = write_transcript(files, "r-1", [("user", "u-1")])

    SessionLedger().own("r-1", path)

    assert not path.exists()


def test_transcripts_not_owned_are_kept(files: TranscriptFiles):
    path = write_transcript(files, "s-1", [("user", "u-1")])
    ledger = SessionLedger()

    ledger.use("s-1")()

    assert path.exists()


# --- aborted attempts -------------------------------------------------------------------------------------------


def test_a_cut_stream_retried_without_streaming_is_discarded():
    attempts = AttemptTracker()
    attempts.started("m-1")
    attempts.part("m-1", 0)
    attempts.stopped()  # message_stop without message_delta: the stream was cut

    attempts.delivered("m-2")  # the CLI's retry, not streamed

    assert attempts.discarded == {0}
    assert attempts.aborted == 1
    assert not attempts.tainted


def test_a_cut_stream_whose_complete_block_the_cli_kept_taints_the_session():
    attempts = AttemptTracker()
    attempts.started("m-1")
    attempts.part("m-1", 0)
    attempts.delivered("m-1")  # the preamble was complete
    attempts.part("m-1", 1)  # the tool call was cut
    attempts.stopped()

    attempts.started("m-2")  # the CLI asks Claude to resume
    attempts.part("m-2", 2)
    attempts.finished()

    assert attempts.discarded == {0, 1}
    assert attempts.tainted


def test_normal_responses_and_a_turn_stopped_mid_response_keep_their_parts():
    attempts = AttemptTracker()
    attempts.started("m-1")
    attempts.part("m-1", 0)
    attempts.tool_call("m-1", "toolu_1")
    attempts.finished()
    attempts.stopped()
    attempts.started("m-2")
    attempts.part("m-2", 1)
    attempts.tool_call("m-2", "toolu_2")
    attempts.tool_result("toolu_2")  # the CLI ran the call before the response ended: acted on, not retried
    attempts.started("m-3")
    attempts.part("m-3", 2)
    attempts.stopped()  # stopped on purpose (an output tool call), and nothing followed

    assert attempts.discarded == set()
    assert attempts.aborted == 0


# --- digests of odd text ----------------------------------------------------------------------------------------


def test_digest_of_text_with_lone_surrogates():
    odd = [ModelRequest(parts=[UserPromptPart("report-\udcff.txt")])]
    plain = [ModelRequest(parts=[UserPromptPart("report-\ufffd.txt")])]

    assert history_digest(odd) != history_digest(plain)
    assert history_digest(odd) == history_digest([ModelRequest(parts=[UserPromptPart("report-\udcff.txt")])])
