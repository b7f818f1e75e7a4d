"""Finding another worker's session transcript in the session store, and copying a replay into it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

from claudecode_model._plan import SessionPoint
from claudecode_model._store_transcripts import (
    StoredTranscript,
    entries_position,
    mirror_transcript,
    transcripts_with_store,
)
from claudecode_model._transcripts import TranscriptFiles

SESSION = "6f1f3d39-1b53-4bd4-9d5b-7d1c2f0a4e11"
TRANSCRIPT: list[Any] = [
    {"type": "queue-operation"},
    {"type": "user", "uuid": "u1"},
    {"type": "assistant", "uuid": "a1"},
    {"type": "attachment", "uuid": "x1"},
    {"type": "user", "uuid": "u2"},
    {"type": "assistant", "uuid": "a2"},
    {"type": "last-prompt"},
]


@pytest.fixture
def files(tmp_path: Path) -> TranscriptFiles:
    return TranscriptFiles(env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}, cwd=tmp_path)


def point(message_uuid: str) -> SessionPoint:
    return SessionPoint(session_id=SESSION, message_uuid=message_uuid, digest="d")


async def stored(files: TranscriptFiles, entries: list[Any]) -> InMemorySessionStore:
    store = InMemorySessionStore()
    key: Any = {"project_key": project_key_for_directory(str(files.cwd)), "session_id": SESSION}
    await store.append(key, entries)
    return store


def test_positions_read_like_the_cli_files():
    assert entries_position(TRANSCRIPT, "a2") == "end"
    assert entries_position(TRANSCRIPT, "a1") == "inside"  # a conversation entry follows (u2)
    assert entries_position(TRANSCRIPT, "zz") == "missing"


async def test_the_store_answers_for_a_session_the_disk_lacks(files: TranscriptFiles):
    store = await stored(files, TRANSCRIPT)
    transcripts = await transcripts_with_store(files, store, point("a1"))
    assert isinstance(transcripts, StoredTranscript)
    assert transcripts.position(SESSION, "a2") == "end"
    assert transcripts.position(SESSION, "a1") == "inside"
    assert transcripts.position("another-session", "a2") == "missing"


async def test_the_disk_wins_and_nothing_is_loaded_without_a_store_or_a_point(files: TranscriptFiles):
    path = files.path(SESSION)
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(entry) for entry in TRANSCRIPT[:3]) + "\n")
    store = await stored(files, TRANSCRIPT)
    assert await transcripts_with_store(files, store, point("a1")) is files
    assert await transcripts_with_store(files, None, point("a1")) is files
    assert await transcripts_with_store(files, store, None) is files


async def test_a_session_in_neither_place_is_missing(files: TranscriptFiles):
    transcripts = await transcripts_with_store(files, InMemorySessionStore(), point("a2"))
    assert transcripts.position(SESSION, "a2") == "missing"


async def test_a_transcript_written_here_is_copied_into_the_store(files: TranscriptFiles):
    path = files.path(SESSION)
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(entry) for entry in TRANSCRIPT) + '\n{"type": "assistant", "uu\n')
    store = InMemorySessionStore()
    await mirror_transcript(store, files, SESSION)
    key: Any = {"project_key": project_key_for_directory(str(files.cwd)), "session_id": SESSION}
    assert await store.load(key) == TRANSCRIPT  # the line cut short is left out
