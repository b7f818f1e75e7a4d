"""Claude Code session stores: where the transcripts of CLI sessions live so that any worker can resume them.

:class:`PostgresSessionStore` (extra ``postgres``) shares sessions between machines; :class:`SQLiteSessionStore`
(no extra dependency) shares them between the processes of one machine. Both implement claude-agent-sdk's
``SessionStore`` protocol; pass one as ``ClaudeCodeModel(session_store=...)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudecode_model.stores.postgres import PostgresSessionStore
    from claudecode_model.stores.sqlite import SQLiteSessionStore

__all__ = ["PostgresSessionStore", "SQLiteSessionStore"]

_SOURCES = {
    "PostgresSessionStore": "claudecode_model.stores.postgres",
    "SQLiteSessionStore": "claudecode_model.stores.sqlite",
}


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
