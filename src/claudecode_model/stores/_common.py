"""What the session stores share: how keys and entries are stored, and the per-session summary fold."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionSummaryEntry,
)

__all__ = [
    "MAIN_SUBPATH",
    "StoredKey",
    "checked_prefix",
    "decode_entry",
    "encode_entry",
    "entry_uuid",
    "folded_summary",
    "summary_entry",
]

MAIN_SUBPATH = ""
"""The subpath column value of a main transcript (subagent transcripts have a non-empty subpath)."""

_PREFIX_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,39}")


@dataclass(frozen=True)
class StoredKey:
    """A :class:`~claude_agent_sdk.types.SessionKey` as three non-null columns."""

    project_key: str
    session_id: str
    subpath: str

    @classmethod
    def of(cls, key: SessionKey | SessionListSubkeysKey) -> StoredKey:
        subpath = cast("dict[str, Any]", key).get("subpath")
        if subpath is not None and (not isinstance(subpath, str) or not subpath):
            raise ValueError(f"a session key's subpath must be a non-empty string or absent, not {subpath!r}")
        for name in ("project_key", "session_id"):
            value = cast("dict[str, Any]", key).get(name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"a session key needs a non-empty string {name}, got {value!r}")
        return cls(key["project_key"], key["session_id"], subpath or MAIN_SUBPATH)

    @property
    def is_main(self) -> bool:
        return self.subpath == MAIN_SUBPATH


def encode_entry(entry: SessionStoreEntry) -> str:
    """One entry as JSON text; ASCII-only, so any string (even a lone surrogate or NUL) survives the database."""
    return json.dumps(entry, ensure_ascii=True, separators=(",", ":"))


def decode_entry(text: str) -> SessionStoreEntry:
    return cast("SessionStoreEntry", json.loads(text))


def entry_uuid(entry: SessionStoreEntry) -> str | None:
    """The entry's idempotency key: its ``uuid`` when it has one (titles, tags and mode markers have none)."""
    value = cast("dict[str, Any]", entry).get("uuid")
    return value if isinstance(value, str) and value else None


def folded_summary(previous_data: str | None, key: StoredKey, entries: list[SessionStoreEntry]) -> str:
    """The session's summary after ``entries``, as JSON text of its opaque ``data`` (the SDK's fold, verbatim).

    The summary's ``mtime`` is not part of it: stores stamp their own write time when they read it back.
    """
    previous: SessionSummaryEntry | None = None
    if previous_data is not None:
        previous = {"session_id": key.session_id, "mtime": 0, "data": json.loads(previous_data)}
    sdk_key: SessionKey = {"project_key": key.project_key, "session_id": key.session_id}
    folded = fold_session_summary(previous, sdk_key, entries)
    return json.dumps(folded["data"], ensure_ascii=True, separators=(",", ":"))


def summary_entry(session_id: str, mtime: int, data: str) -> SessionSummaryEntry:
    return {"session_id": session_id, "mtime": int(mtime), "data": json.loads(data)}


def checked_prefix(table_prefix: str) -> str:
    """The table-name prefix, refused unless it is a plain lower-case SQL identifier."""
    if not isinstance(table_prefix, str) or not _PREFIX_PATTERN.fullmatch(table_prefix):
        raise ValueError(
            f"table_prefix must be a lower-case SQL identifier (letters, digits, _; at most 40), not {table_prefix!r}"
        )
    return table_prefix
