"""Taking up a CLI session that is not live in this process: resume it, fork it at a point, or give up on it.

A response records the session it came from and the transcript entry its turn ended with (its *leaf*). When a
later request continues from that response and no live CLI process holds the session, the session's transcript is
looked up (on local disk, then in the session store) and:

- it ends at the leaf: the session is resumed as it is (same session id);
- it goes on past the leaf (the history was cut, or another branch continued it): the session is resumed *at* the
  leaf and forked, so Claude sees exactly the history and the original session stays intact;
- it is nowhere, or does not hold the leaf (a turn cut short before its transcript was saved): the caller replays
  the history instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import AssistantMessage, UserMessage, project_key_for_directory
from claude_agent_sdk.types import Message, SessionKey, SessionStore
from pydantic_ai.messages import ModelMessage, ModelResponse

from claudecode_model._replay import transcript_path

logger = logging.getLogger(__name__)

TRANSCRIPT_LEAF_KEY = "transcript_leaf"
"""``provider_details`` key: the uuid of the last transcript entry of the turn that produced the response."""

_CONVERSATION_TYPES = ("user", "assistant")


@dataclass(frozen=True)
class ResumePoint:
    """How to resume a session: ``resume=session_id``, and ``resume_session_at``/``fork_session`` for a branch."""

    session_id: str
    at: str | None = None
    fork: bool = False


def transcript_leaf(messages: Sequence[Message]) -> str | None:
    """The uuid of the last main-conversation message (assistant reply or tool result) of a turn."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage | UserMessage) and message.parent_tool_use_id is None and message.uuid:
            return message.uuid
    return None


def recorded_leaf(messages: Sequence[ModelMessage]) -> str | None:
    """The leaf recorded on the last response of a history (``None`` for responses that predate it)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            leaf = (message.provider_details or {}).get(TRANSCRIPT_LEAF_KEY)
            return leaf if isinstance(leaf, str) and leaf else None
    return None


async def resume_point(
    session_id: str,
    leaf: str | None,
    *,
    store: SessionStore | None,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
) -> ResumePoint | None:
    """How to resume ``session_id`` so that it ends at ``leaf``; ``None`` when it cannot be (replay instead)."""
    entries = await asyncio.to_thread(_local_entries, session_id, env, cwd)
    source = "local transcript"
    if entries is None and store is not None:
        directory = str(cwd) if cwd is not None else os.getcwd()
        loaded = await store.load({"project_key": project_key_for_directory(directory), "session_id": session_id})
        entries = [dict(entry) for entry in loaded] if loaded else None
        source = "session store"
    if not entries:
        logger.info("session %s is neither on this machine nor in a session store: replaying the history", session_id)
        return None
    if leaf is None:
        return ResumePoint(session_id)
    if not any(entry.get("uuid") == leaf for entry in entries):
        logger.info("the %s of session %s does not reach this history's end: replaying it", source, session_id)
        return None
    if _tip(entries) == leaf:
        return ResumePoint(session_id)
    logger.debug("session %s went on past this history's end: resuming it forked at %s", session_id, leaf)
    return ResumePoint(session_id, at=leaf, fork=True)


async def mirror_transcript(
    store: SessionStore, session_id: str, *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> None:
    """Copy a transcript written here (a replayed history) into the store.

    The CLI mirrors only the entries it writes itself: without this, the store would hold a replayed session from
    its first new turn on, and a worker resuming it from the store would give Claude a history without its start.
    """
    entries = await asyncio.to_thread(_local_entries, session_id, env, cwd)
    if entries:
        directory = str(cwd) if cwd is not None else os.getcwd()
        key: SessionKey = {"project_key": project_key_for_directory(directory), "session_id": session_id}
        await store.append(key, entries)


def _tip(entries: Sequence[dict[str, Any]]) -> str | None:
    """The uuid of the session's last main-conversation entry."""
    for entry in reversed(entries):
        if entry.get("type") in _CONVERSATION_TYPES and not entry.get("isSidechain") and entry.get("uuid"):
            return str(entry["uuid"])
    return None


def _local_entries(session_id: str, env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> list[Any] | None:
    path = transcript_path(session_id, env=env, cwd=cwd)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    entries: list[Any] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a crash: the entries before it still count
    return [entry for entry in entries if isinstance(entry, dict)]
