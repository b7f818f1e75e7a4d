"""Closing models from synchronous code, and at interpreter exit, so that programs end silently.

A ``run_sync`` program leaves its idle CLI sessions on the thread's event loop, which nobody closes. Killing their
processes at exit is not enough: the tasks owning them would be destroyed pending, and Python prints "Task was
destroyed but it is pending" and "coroutine ignored GeneratorExit". So at exit each model still alive is closed
properly, on the loop its sessions belong to, before anything else is torn down.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable
from typing import Protocol

from claudecode_model.exceptions import ClaudeCodeError

__all__ = ["close_blocking", "track"]

logger = logging.getLogger(__name__)


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_MODELS: weakref.WeakKeyDictionary[_Closable, Callable[[], None]] = weakref.WeakKeyDictionary()
_registered = threading.Lock()
_hook_registered = False


def track(model: _Closable, kill: Callable[[], None]) -> None:
    """Close ``model`` at interpreter exit if it is still alive then (``kill`` is the fallback that only kills).

    The exit hook is registered at the first request rather than at import: ``atexit`` runs hooks last-in first-out,
    so the CLIs are stopped before the cleanups registered earlier (an offline backend's temp dirs, say) run.
    """
    global _hook_registered
    _MODELS.setdefault(model, kill)
    with _registered:
        if not _hook_registered:
            atexit.register(_close_all_at_exit)
            _hook_registered = True


def close_blocking(close: Callable[[], Awaitable[None]]) -> None:
    """Run ``close()`` to completion from synchronous code, on this thread's event loop (the one ``run_sync`` uses)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ClaudeCodeError("close() cannot be called from async code; use `await model.aclose()`")
    loop = _thread_loop()
    if loop is None:
        asyncio.run(_awaited(close))
        return
    loop.run_until_complete(_awaited(close))


async def _awaited(close: Callable[[], Awaitable[None]]) -> None:
    await close()


def _thread_loop() -> asyncio.AbstractEventLoop | None:
    """This thread's event loop if it has one that is open (``run_sync`` leaves it set), else ``None``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None
    return None if loop.is_closed() or loop.is_running() else loop


def _close_all_at_exit() -> None:
    for model, kill in list(_MODELS.items()):
        try:
            close_blocking(model.aclose)
        except BaseException as error:  # exit must go on: fall back to killing the processes
            logger.debug("closing a model at exit failed (%r); killing its CLI processes", error)
            kill()
