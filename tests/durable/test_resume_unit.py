"""How a session that is not live is taken up: resumed as it is, forked at the history's end, or not at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

from claudecode_model._replay import transcript_path
from claudecode_model._resume import ResumePoint, mirror_transcript, resume_point

SESSION = "6f1f3d39-1b53-4bd4-9d5b-7d1c2f0a4e11"


def entry(kind: str, uuid: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "sessionId": SESSION, **extra}


TRANSCRIPT = [
    {"type": "queue-operation"},
    entry("user", "u1"),
    entry("assistant", "a1"),
    entry("attachment", "x1"),
    entry("user", "u2"),
    entry("assistant", "a2"),
    entry("assistant", "side", isSidechain=True),
    {"type": "last-prompt"},
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}


def write_local(env: dict[str, str], cwd: Path, lines: list[str]) -> None:
    path = transcript_path(SESSION, env=env, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")


async def test_a_local_transcript_ending_at_the_leaf_is_resumed_as_it_is(env: dict[str, str], tmp_path: Path):
    write_local(env, tmp_path, [json.dumps(e) for e in TRANSCRIPT])
    assert await resume_point(SESSION, "a2", store=None, env=env, cwd=tmp_path) == ResumePoint(SESSION)
    assert await resume_point(SESSION, None, store=None, env=env, cwd=tmp_path) == ResumePoint(SESSION)


async def test_a_transcript_that_went_on_is_forked_at_the_leaf(env: dict[str, str], tmp_path: Path):
    write_local(env, tmp_path, [json.dumps(e) for e in TRANSCRIPT])
    assert await resume_point(SESSION, "a1", store=None, env=env, cwd=tmp_path) == ResumePoint(
        SESSION, at="a1", fork=True
    )


async def test_a_transcript_without_the_leaf_or_nowhere_means_replay(env: dict[str, str], tmp_path: Path):
    assert await resume_point(SESSION, "a2", store=None, env=env, cwd=tmp_path) is None
    write_local(env, tmp_path, [json.dumps(e) for e in TRANSCRIPT[:3]])
    assert await resume_point(SESSION, "a2", store=None, env=env, cwd=tmp_path) is None


async def test_a_line_cut_short_by_a_crash_does_not_hide_the_entries_before_it(env: dict[str, str], tmp_path: Path):
    lines = [json.dumps(e) for e in TRANSCRIPT[:6]]
    write_local(env, tmp_path, [*lines, '{"type": "assistant", "uu'])
    assert await resume_point(SESSION, "a2", store=None, env=env, cwd=tmp_path) == ResumePoint(SESSION)


async def test_the_store_is_asked_when_the_disk_has_nothing(env: dict[str, str], tmp_path: Path):
    store = InMemorySessionStore()
    key: Any = {"project_key": project_key_for_directory(str(tmp_path)), "session_id": SESSION}
    await store.append(key, TRANSCRIPT)
    assert await resume_point(SESSION, "a2", store=store, env=env, cwd=tmp_path) == ResumePoint(SESSION)
    assert await resume_point(SESSION, "a1", store=store, env=env, cwd=tmp_path) == ResumePoint(
        SESSION, at="a1", fork=True
    )


async def test_a_transcript_written_here_is_copied_into_the_store(env: dict[str, str], tmp_path: Path):
    write_local(env, tmp_path, [json.dumps(e) for e in TRANSCRIPT])
    store = InMemorySessionStore()
    await mirror_transcript(store, SESSION, env=env, cwd=tmp_path)
    key: Any = {"project_key": project_key_for_directory(str(tmp_path)), "session_id": SESSION}
    assert await store.load(key) == TRANSCRIPT
