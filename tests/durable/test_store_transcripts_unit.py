"""Finding a session's transcript whole in the session store or on disk, copying a replay into the store, and the
store guard (bounded calls, failed writes sent again, a checked copy handed to the SDK's resume)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

from claudecode_model._history.plan import SessionPoint
from claudecode_model._history.store import GuardedStore, StoreUnavailableError
from claudecode_model._history.stored_transcripts import SessionCopy, find_transcript, mirror_transcript
from claudecode_model._history.transcripts import TranscriptFiles, entries_position

SESSION = "6f1f3d39-1b53-4bd4-9d5b-7d1c2f0a4e11"
TRANSCRIPT: list[Any] = [
    {"type": "queue-operation"},
    {"type": "user", "uuid": "u1", "parentUuid": None},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1"},
    {"type": "attachment", "uuid": "x1", "parentUuid": "a1"},
    {"type": "user", "uuid": "u2", "parentUuid": "x1"},
    {"type": "assistant", "uuid": "a2", "parentUuid": "u2"},
    {"type": "last-prompt"},
]
WITHOUT_TURN_ONE_REPLY = [entry for entry in TRANSCRIPT if entry.get("uuid") != "a1"]


@pytest.fixture
def files(tmp_path: Path) -> TranscriptFiles:
    return TranscriptFiles(env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}, cwd=tmp_path)


def point(message_uuid: str) -> SessionPoint:
    return SessionPoint(session_id=SESSION, message_uuid=message_uuid, digest="d")


def key_of(files: TranscriptFiles) -> Any:
    return {"project_key": project_key_for_directory(str(files.cwd)), "session_id": SESSION}


async def stored(files: TranscriptFiles, entries: list[Any]) -> GuardedStore:
    store = InMemorySessionStore()
    await store.append(key_of(files), entries)
    return GuardedStore(store)


def on_disk(files: TranscriptFiles, entries: list[Any]) -> None:
    path = files.path(SESSION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(entry) for entry in entries) + "\n")


def test_positions_read_like_the_cli_files():
    assert entries_position(TRANSCRIPT, "a2") == "end"
    assert entries_position(TRANSCRIPT, "a1") == "inside"  # a conversation entry follows (u2)
    assert entries_position(TRANSCRIPT, "zz") == "missing"


def test_a_point_whose_chain_of_parents_has_a_gap_is_broken():
    assert entries_position(WITHOUT_TURN_ONE_REPLY, "a2") == "broken"
    assert entries_position(WITHOUT_TURN_ONE_REPLY, "u1") == "inside"  # before the gap: whole
    cycle = [
        {"type": "user", "uuid": "u1", "parentUuid": "a1"},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1"},
    ]
    assert entries_position(cycle, "a1") == "broken"
    # A compaction boundary starts a chain of its own (parentUuid null): what came before it is not needed.
    compacted = [
        {"type": "system", "subtype": "compact_boundary", "uuid": "b", "parentUuid": None, "logicalParentUuid": "a1"},
        {"type": "user", "uuid": "u3", "parentUuid": "b"},
    ]
    assert entries_position(compacted, "u3") == "end"


def test_a_point_a_rewind_cut_off_is_missing():
    # The CLI's rewind_conversation to u2 writes a row naming it; the conversation goes on from a1 (a new u3).
    rewound_to_u2 = [
        *TRANSCRIPT,
        {"type": "last-prompt", "cutUuid": "u2"},
        {"type": "user", "uuid": "u3", "parentUuid": "x1"},
    ]
    assert entries_position(rewound_to_u2, "a2") == "missing"  # the CLI no longer resumes at it
    assert entries_position(rewound_to_u2, "a1") == "inside"  # before the cut: kept
    assert entries_position(rewound_to_u2, "u3") == "end"
    # Rewound to its first message, the conversation is gone whole; the next one starts a chain of its own.
    rewound_to_empty = [*TRANSCRIPT, {"type": "last-prompt", "cutUuid": "u1"}, {"type": "user", "uuid": "n1"}]
    assert [entries_position(rewound_to_empty, uuid) for uuid in ("u1", "a1", "a2", "n1")] == [
        "missing",
        "missing",
        "missing",
        "end",
    ]


async def test_the_store_answers_for_a_session_the_disk_lacks(files: TranscriptFiles):
    store = await stored(files, TRANSCRIPT)
    found = await find_transcript(files, store, point("a1"))
    assert isinstance(found, SessionCopy)
    assert found.origin == "store"
    assert found.position(SESSION, "a2") == "end"
    assert found.position(SESSION, "a1") == "inside"
    assert found.position("another-session", "a2") == "missing"


async def test_without_a_store_or_a_point_the_disk_answers(files: TranscriptFiles):
    on_disk(files, TRANSCRIPT[:3])
    store = await stored(files, TRANSCRIPT)
    assert await find_transcript(files, None, point("a1")) is files
    assert await find_transcript(files, store, None) is files
    assert files.position(SESSION, "a1") == "end"


async def test_a_stored_copy_with_a_gap_gives_way_to_a_whole_copy_on_disk_which_repairs_it(
    files: TranscriptFiles, caplog: pytest.LogCaptureFixture
):
    on_disk(files, TRANSCRIPT)
    store = await stored(files, WITHOUT_TURN_ONE_REPLY)
    with caplog.at_level(logging.WARNING):
        found = await find_transcript(files, store, point("a2"))
    assert isinstance(found, SessionCopy)
    assert (found.origin, found.position(SESSION, "a2")) == ("disk", "end")
    assert "lacks entries before the history's end" in caplog.text
    repaired = await store.store.load(key_of(files))
    assert repaired is not None
    assert entries_position(repaired, "a2") == "inside"  # whole again (the missing reply was appended after it)


async def test_a_gap_in_every_copy_means_a_replay(files: TranscriptFiles, caplog: pytest.LogCaptureFixture):
    store = await stored(files, WITHOUT_TURN_ONE_REPLY)
    with caplog.at_level(logging.WARNING):
        found = await find_transcript(files, store, point("a2"))
    assert found.position(SESSION, "a2") == "broken"
    assert "the history is replayed" in caplog.text


async def test_a_session_in_neither_place_is_missing(files: TranscriptFiles):
    found = await find_transcript(files, GuardedStore(InMemorySessionStore()), point("a2"))
    assert found.position(SESSION, "a2") == "missing"


async def test_a_transcript_written_here_is_copied_into_the_store(files: TranscriptFiles):
    path = files.path(SESSION)
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(entry) for entry in TRANSCRIPT) + '\n{"type": "assistant", "uu\n')
    store = GuardedStore(InMemorySessionStore())
    assert await mirror_transcript(store, files, SESSION) == TRANSCRIPT
    assert await store.store.load(key_of(files)) == TRANSCRIPT  # the line cut short is left out


class FlakyStore(InMemorySessionStore):
    """Appends fail while ``failing``; loads hang while ``hanging``."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False
        self.hanging = False
        self.calls = 0

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.calls += 1
        if self.hanging:
            await asyncio.sleep(3600)
        if self.failing:
            raise OSError("disk full")
        await super().append(key, entries)

    async def load(self, key: Any) -> Any:
        self.calls += 1
        if self.hanging:
            await asyncio.sleep(3600)
        return await super().load(key)


@pytest.fixture
def flaky() -> FlakyStore:
    return FlakyStore()


async def failed_append(flaky: FlakyStore, store: GuardedStore, key: Any, entries: list[Any]) -> None:
    """Append ``entries`` through ``store`` while ``flaky`` (what it guards) fails: the error reaches the caller."""
    flaky.failing = True
    with pytest.raises(OSError, match="disk full"):
        await store.append(key, entries)


async def test_entries_of_a_failed_append_go_ahead_of_the_next_one(files: TranscriptFiles, flaky: FlakyStore):
    store = GuardedStore(flaky)
    key = key_of(files)
    await store.append(key, TRANSCRIPT[:3])
    for _ in range(3):  # the SDK tries a batch three times
        await failed_append(flaky, store, key, TRANSCRIPT[3:5])
    assert store.unsent(key) == 2
    flaky.failing = False
    await store.append(key, TRANSCRIPT[5:])
    assert store.unsent(key) == 0
    assert await flaky.load(key) == TRANSCRIPT  # in order, each entry once


async def test_a_store_that_does_not_answer_times_out_and_is_left_alone_until_the_call_ends(
    files: TranscriptFiles, flaky: FlakyStore
):
    store = GuardedStore(flaky, timeout=0.05)
    key = key_of(files)
    flaky.hanging = True
    with pytest.raises(TimeoutError, match=r"append\(\) took longer than 0.05 s"):
        await store.append(key, TRANSCRIPT)
    calls = flaky.calls
    with pytest.raises(StoreUnavailableError):
        await store.append(key, TRANSCRIPT)
    assert await store.load_checked(key) is None  # a read that cannot be made is no copy
    assert flaky.calls == calls  # not asked again while the call that timed out goes on
    assert store.unsent(key) == len(TRANSCRIPT)
    await store.aclose()  # ends that call
    flaky.hanging = False
    await store.append(key, [])
    assert await flaky.load(key) == TRANSCRIPT


async def test_a_staged_copy_is_what_a_resume_loads(files: TranscriptFiles):
    store = await stored(files, WITHOUT_TURN_ONE_REPLY)
    key = key_of(files)
    with store.staged(key, TRANSCRIPT):
        assert await store.load(key) == TRANSCRIPT
    assert await store.load(key) == WITHOUT_TURN_ONE_REPLY
    assert await store.list_subkeys({"project_key": key["project_key"], "session_id": SESSION}) == []


async def test_entries_left_unsent_are_written_when_the_model_closes(files: TranscriptFiles, flaky: FlakyStore):
    store = GuardedStore(flaky)
    key = key_of(files)
    await failed_append(flaky, store, key, TRANSCRIPT)
    flaky.failing = False
    await store.aclose()
    assert store.unsent(key) == 0
    assert await flaky.load(key) == TRANSCRIPT


async def test_entries_a_failing_store_never_took_are_given_up_with_a_warning(
    files: TranscriptFiles, flaky: FlakyStore, caplog: pytest.LogCaptureFixture
):
    store = GuardedStore(flaky)
    key = key_of(files)
    await failed_append(flaky, store, key, TRANSCRIPT)
    with caplog.at_level(logging.WARNING):
        await store.aclose()
    assert "the entries of 1 session(s) that failed to reach it are given up" in caplog.text
    assert store.unsent(key) == 0


async def test_a_read_sends_the_session_s_unsent_entries_first_or_adds_them_to_what_it_read(
    files: TranscriptFiles, flaky: FlakyStore
):
    store = GuardedStore(flaky)
    key = key_of(files)
    await store.append(key, TRANSCRIPT[:3])
    await failed_append(flaky, store, key, TRANSCRIPT[3:])
    assert await store.load_checked(key) == TRANSCRIPT  # what the store has, and what it still lacks
    assert await flaky.load(key) == TRANSCRIPT[:3]
    flaky.failing = False
    assert await store.load_checked(key) == TRANSCRIPT
    assert await flaky.load(key) == TRANSCRIPT  # sent before the read
    assert store.unsent(key) == 0
