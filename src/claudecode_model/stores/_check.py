"""Checking a ``session_store`` argument, without importing claude-agent-sdk (the model module stays light)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStore


def checked_session_store(store: object) -> SessionStore | None:
    """``store`` if it can serve as a claude-agent-sdk ``SessionStore`` (async ``append`` and ``load``), else a
    ``TypeError`` naming what is missing."""
    if store is None:
        return None
    missing = [name for name in ("append", "load") if not inspect.iscoroutinefunction(getattr(store, name, None))]
    if missing:
        raise TypeError(
            f"session_store must implement claude-agent-sdk's SessionStore protocol (async append() and load()); "
            f"{type(store).__name__} lacks async {' and '.join(f'{name}()' for name in missing)}"
        )
    return cast("SessionStore", store)
