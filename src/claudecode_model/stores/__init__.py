"""Claude Code session stores: where the transcripts of CLI sessions live so that any worker can resume them.

:class:`PostgresSessionStore` (extra ``postgres``) shares sessions between machines; :class:`SQLiteSessionStore`
(no extra dependency) shares them between the processes of one machine. Both implement claude-agent-sdk's
``SessionStore`` protocol; pass one as ``ClaudeCodeModel(session_store=...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claudecode_model._lazy import lazy_exports

if TYPE_CHECKING:
    from claudecode_model.stores.postgres import PostgresSessionStore
    from claudecode_model.stores.sqlite import SQLiteSessionStore

__all__ = ["PostgresSessionStore", "SQLiteSessionStore"]

_SOURCES = {
    "PostgresSessionStore": "claudecode_model.stores.postgres",
    "SQLiteSessionStore": "claudecode_model.stores.sqlite",
}


__getattr__, __dir__ = lazy_exports(globals(), __all__, _SOURCES)
