"""Checking a ``session_store`` argument, without importing claude-agent-sdk (the model module stays light)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStore

__all__ = ["DEFAULT_STORE_TIMEOUT", "checked_session_store", "checked_store_timeout"]

DEFAULT_STORE_TIMEOUT = 5.0
"""Seconds one session store call may take by default (a healthy store answers in milliseconds)."""


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


def checked_store_timeout(timeout: object) -> float:
    """``timeout`` as seconds, else a ``ValueError`` naming it."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
        raise ValueError(f"session_store_timeout must be a positive number of seconds, not {timeout!r}")
    return float(timeout)
