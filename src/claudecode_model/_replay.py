"""Replaying a history into a new CLI session by writing a session transcript the CLI can ``--resume``.

The CLI keeps each session as JSONL under ``<CLAUDE_CONFIG_DIR>/projects/<sanitised cwd>/<session id>.jsonl``;
``--resume <id>`` sends the whole transcript to the API as real messages. Writing the history in that format makes a
replay faithful: roles, tool calls and tool results reach Claude as they were, not flattened into one prompt.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claude_agent_sdk._internal import sessions as _sdk_sessions

from claudecode_model._history import TranscriptEntry


def transcript_path(session_id: str, *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> Path:
    """Where the CLI keeps (or looks for) the transcript of ``session_id`` for this config dir and cwd."""
    project = _sdk_sessions._canonicalize_path(str(cwd) if cwd is not None else os.getcwd())
    projects_dir = _sdk_sessions._get_projects_dir(dict(env))
    return projects_dir / _sdk_sessions._sanitize_path(project) / f"{session_id}.jsonl"


def write_replay_transcript(
    entries: Sequence[TranscriptEntry], *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> str:
    """Write ``entries`` as a new session transcript and return its session id, ready for ``resume=``."""
    session_id = str(uuid.uuid4())
    path = transcript_path(session_id, env=env, cwd=cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    working_dir = str(cwd) if cwd is not None else os.getcwd()
    parent: str | None = None
    lines: list[str] = []
    for entry in entries:
        entry_uuid = str(uuid.uuid4())
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": entry.role,
            "message": _message(entry),
            "uuid": entry_uuid,
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "userType": "external",
            "cwd": working_dir,
            "sessionId": session_id,
        }
        lines.append(json.dumps(record, ensure_ascii=False))
        parent = entry_uuid
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return session_id


def _message(entry: TranscriptEntry) -> dict[str, Any]:
    if entry.role == "user":
        return {"role": "user", "content": entry.content}
    has_tool_use = any(block.get("type") == "tool_use" for block in entry.content)
    return {
        "id": f"msg_replay_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": "replay",
        "content": entry.content,
        "stop_reason": "tool_use" if has_tool_use else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
