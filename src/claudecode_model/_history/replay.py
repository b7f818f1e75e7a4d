"""Replaying a history into a new CLI session: the Anthropic transcript of a history, written as a session file.

The CLI keeps each session as JSONL under ``<CLAUDE_CONFIG_DIR>/projects/<sanitised cwd>/<session id>.jsonl``;
``--resume <id>`` sends the whole transcript to the API as real messages. Writing the history in that format makes a
replay faithful: roles, tool calls and tool results reach Claude as they were, not flattened into one prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic_ai.messages import (
    FilePart,
    ModelMessage,
    ModelRequest,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

from claudecode_model._compat import session_transcript_path
from claudecode_model._history.cut_results import cap_text
from claudecode_model._history.details import (
    APPROVED_CALL_KEY,
    CLI_TOOL_NAME_KEY,
    PARENT_TOOL_CALL_ID_KEY,
    PROVIDER_NAME,
)
from claudecode_model._history.to_anthropic import ContentBlock, request_blocks
from claudecode_model.exceptions import ClaudeCodeError, MessageConversionError

__all__ = [
    "TranscriptEntry",
    "transcript_of",
    "transcript_path",
    "write_branch_with_deferred_call",
    "write_replay_transcript",
]


@dataclass(frozen=True)
class TranscriptEntry:
    """One message of a conversation as the Anthropic API sees it."""

    role: Literal["user", "assistant"]
    content: list[ContentBlock]


def transcript_of(history: Sequence[ModelMessage]) -> list[TranscriptEntry]:
    """The Anthropic message sequence equivalent to ``history``, for replay into a new session.

    A Claude Code response holds tool calls the CLI executed and their results in one ``ModelResponse``; on the
    wire these alternate between assistant ``tool_use`` and user ``tool_result`` messages, so they are split.
    The result of an approved built-in call comes in the response after the approval: it takes the place of the
    approval's text in the ``tool_result`` already written.
    """
    entries: list[TranscriptEntry] = []

    def add(role: Literal["user", "assistant"], blocks: list[ContentBlock]) -> None:
        if not blocks:
            return
        if entries and entries[-1].role == role:
            entries[-1].content.extend(blocks)
        else:
            entries.append(TranscriptEntry(role=role, content=list(blocks)))

    def settle_earlier(part: NativeToolReturnPart) -> None:
        for entry in reversed(entries):
            for block in entry.content:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == part.tool_call_id:
                    block["content"] = part.model_response_str()
                    block["is_error"] = part.outcome != "success"
                    return

    for message in history:
        if isinstance(message, ModelRequest):
            add("user", request_blocks(message))
            continue
        pending: list[ContentBlock] = []
        called = {part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart | NativeToolCallPart)}
        for part in message.parts:
            if PARENT_TOOL_CALL_ID_KEY in (getattr(part, "provider_details", None) or {}):
                continue  # a subagent's call or result: it happened inside the Agent call, which is replayed
            match part:
                case TextPart():
                    if part.content:
                        pending.append({"type": "text", "text": part.content})
                case ThinkingPart():
                    if part.signature and part.provider_name in (PROVIDER_NAME, "anthropic"):
                        pending.append({"type": "thinking", "thinking": part.content, "signature": part.signature})
                case ToolCallPart() | NativeToolCallPart():
                    name = (part.provider_details or {}).get(CLI_TOOL_NAME_KEY, part.tool_name)
                    pending.append(
                        {
                            "type": "tool_use",
                            "id": part.tool_call_id,
                            "name": name,
                            "input": part.args_as_dict(),
                        }
                    )
                case NativeToolReturnPart() if part.tool_call_id not in called and APPROVED_CALL_KEY in (
                    part.provider_details or {}
                ):
                    settle_earlier(part)
                case NativeToolReturnPart():
                    add("assistant", pending)
                    pending = []
                    is_error = part.outcome != "success"
                    add(
                        "user",
                        [
                            {
                                "type": "tool_result",
                                "tool_use_id": part.tool_call_id,
                                # Cut as Claude saw it in the turn that ran the tool (see to_anthropic).
                                "content": cap_text(part.model_response_str(), tool_use_id=part.tool_call_id),
                                "is_error": is_error,
                            }
                        ],
                    )
                case FilePart():
                    raise MessageConversionError("Claude Code cannot replay a response that holds a file part.")
                case _:
                    continue
        add("assistant", pending)
    return entries


def transcript_path(session_id: str, *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> Path:
    """Where the CLI keeps (or looks for) the transcript of ``session_id`` for this config dir and cwd."""
    return session_transcript_path(session_id, env=env, cwd=str(cwd) if cwd is not None else os.getcwd())


def write_replay_transcript(
    entries: Sequence[TranscriptEntry],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
    deferred_call: ContentBlock | None = None,
) -> str:
    """Write ``entries`` as a new session transcript and return its session id, ready for ``resume=``.

    ``deferred_call`` (a ``tool_use`` block of the last entry) is recorded as a call a hook deferred: resumed with no
    new message, the CLI runs it again (its MCP handler is called with the same ``tool_use`` id) and goes on.

    Raises:
        ClaudeCodeError: The transcript could not be written (a read-only or full config dir), naming the folder.
    """
    session_id = str(uuid.uuid4())
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
        lines.append(_json_line(record))
        parent = entry_uuid
    if deferred_call is not None:
        lines.append(_json_line(_deferred_record(deferred_call, parent, session_id, working_dir)))
    _write_transcript(transcript_path(session_id, env=env, cwd=cwd), lines)
    return session_id


def write_branch_with_deferred_call(
    entries: Sequence[Mapping[str, Any]],
    deferred_call: ContentBlock,
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
) -> str:
    """Write a session's own transcript ``entries`` (the CLI's records, up to the reply that made ``deferred_call``)
    as a new session, with the call recorded as deferred, and return the new session id, ready for ``resume=``.

    Resumed with no new message, the CLI runs the call again (its MCP handler answers with pydantic-ai's result) and
    goes on: Claude sees the session's transcript as the CLI recorded it, not a conversion of the history.

    Raises:
        ClaudeCodeError: The transcript could not be written, naming the folder.
    """
    session_id = str(uuid.uuid4())
    working_dir = str(cwd) if cwd is not None else os.getcwd()
    lines: list[str] = []
    parent: str | None = None
    for entry in entries:
        copied = dict(entry)
        if "sessionId" in copied:
            copied["sessionId"] = session_id
        lines.append(_json_line(copied))
        if isinstance(copied.get("uuid"), str):
            parent = copied["uuid"]
    lines.append(_json_line(_deferred_record(deferred_call, parent, session_id, working_dir)))
    _write_transcript(transcript_path(session_id, env=env, cwd=cwd), lines)
    return session_id


def _write_transcript(path: Path, lines: Sequence[str]) -> None:
    """Write a transcript owner-only (0600), as the CLI writes its own, creating its folders 0700 as the CLI does."""
    try:
        _private_folders(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    except OSError as error:
        reason = error.strerror or str(error)
        raise ClaudeCodeError(
            f"Claude Code cannot replay the message history: writing its session transcript to {path.parent} "
            f"failed ({reason}). The CLI's config dir (CLAUDE_CONFIG_DIR) must be writable and have free space."
        ) from error


def _private_folders(folder: Path) -> None:
    """Create ``folder`` and each missing folder above it owner-only (0700); folders that exist keep their mode."""
    missing: list[Path] = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):
            level.mkdir(mode=0o700)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_line(record: dict[str, Any]) -> str:
    """``record`` as one JSON line: UTF-8 text as it is, lone surrogates (not UTF-8) as ``\\uXXXX`` escapes."""
    text = json.dumps(record, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


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


def _deferred_record(call: ContentBlock, parent: str | None, session_id: str, cwd: str) -> dict[str, Any]:
    """The transcript entry the CLI writes when a PreToolUse hook defers a call (``permissionDecision: "defer"``)."""
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "attachment": {
            "type": "hook_deferred_tool",
            "toolUseID": call["id"],
            "toolName": call["name"],
            "toolInput": call.get("input", {}),
            "hookName": "settings",
            "hookEvent": "PreToolUse",
            "permissionMode": "default",
        },
        "type": "attachment",
        "uuid": str(uuid.uuid4()),
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
    }
