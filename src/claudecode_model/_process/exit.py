"""Closing models from any context, and at interpreter exit, so that programs end silently.

A ``run_sync`` program leaves its idle CLI sessions on the thread's event loop, which nobody closes. Killing their
processes is not enough: the tasks owning them would be destroyed pending, and Python prints "Task was destroyed but
it is pending" and "coroutine ignored GeneratorExit". So a session is always closed on the loop it belongs to:
:func:`close_on` runs a close there from a coroutine of another loop (``asyncio.run(model.aclose())`` after
``run_sync``), :func:`close_blocking` from synchronous code, and at exit each model still alive is closed that way
before anything else is torn down.

This module is the process's one exit registry: models to close (:func:`track`) and the owners of CLI processes to
kill if they are still alive after that (:func:`kill_at_exit`: pools, parking lots, sessions in neither) are all
handled by one ``atexit`` hook.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

__all__ = ["Closable", "close_blocking", "close_on", "kill_at_exit", "track"]

logger = logging.getLogger(__name__)


class Closable(Protocol):
    """What is closed at interpreter exit: a model."""

    async def aclose(self) -> None: ...


_MODELS: weakref.WeakKeyDictionary[Closable, Callable[[], None]] = weakref.WeakKeyDictionary()
_KILLS: weakref.WeakKeyDictionary[Any, Callable[[Any], None]] = weakref.WeakKeyDictionary()
_registered = threading.Lock()
_hook_registered = False

Owner = TypeVar("Owner")


def track(model: Closable, kill: Callable[[], None]) -> None:
    """Close ``model`` at interpreter exit if it is still alive then (``kill`` is the fallback that only kills)."""
    _MODELS.setdefault(model, kill)
    _register_hook()


def kill_at_exit(owner: Owner, kill: Callable[[Owner], None]) -> None:
    """Call ``kill(owner)`` at interpreter exit if ``owner`` (held weakly) is still alive then, after the models
    were closed: the last resort for CLI processes no model closed (spares still starting, turns of a loop that
    was left)."""
    _KILLS.setdefault(owner, kill)
    _register_hook()


def _register_hook() -> None:
    """Register the exit hook at first use rather than at import: ``atexit`` runs hooks last-in first-out, so the
    CLIs are stopped before the cleanups registered earlier (an offline backend's temp dirs, say) run."""
    global _hook_registered
    with _registered:
        if not _hook_registered:
            atexit.register(_at_exit)
            _hook_registered = True


_CLOSING: set[asyncio.Task[None]] = set()
"""Closes :func:`close_blocking` started in a running loop (kept referenced until done)."""


def close_blocking(close: Callable[[], Awaitable[None]], *, stop_now: Callable[[], None]) -> None:
    """Run ``close()`` from synchronous code: to completion on this thread's event loop (the one ``run_sync``
    uses), or, called from a coroutine (whose loop cannot be blocked), ``stop_now()`` (which stops the processes at
    once) and ``close()`` in a task of the running loop that tidies up the rest."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        stop_now()
        task = running.create_task(_awaited(close), name="claude-code-close")
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)
        return
    loop = _thread_loop()
    if loop is None:
        asyncio.run(_awaited(close))
        return
    loop.run_until_complete(_awaited(close))


async def _awaited(close: Callable[[], Awaitable[None]]) -> None:
    await close()


async def close_on(loop: asyncio.AbstractEventLoop, close: Callable[[], Awaitable[None]]) -> None:
    """Run ``close()`` on ``loop`` from a coroutine of another loop and wait for it: in a helper thread if ``loop``
    does not run (a ``run_sync`` program's loop between calls), else through the thread that runs it."""
    if loop.is_closed():
        return
    if not loop.is_running():
        try:
            await asyncio.to_thread(_run_idle_loop, loop, close)
            return
        except _LoopBusy:
            pass  # another thread started running it meanwhile
    if loop.is_closed():
        return
    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_awaited(close), loop))


class _LoopBusy(Exception):
    pass


def _run_idle_loop(loop: asyncio.AbstractEventLoop, close: Callable[[], Awaitable[None]]) -> None:
    if loop.is_running() or loop.is_closed():
        raise _LoopBusy
    coroutine = _awaited(close)
    try:
        loop.run_until_complete(coroutine)
    except RuntimeError:
        if loop.is_running():
            coroutine.close()
            raise _LoopBusy from None
        raise


def _thread_loop() -> asyncio.AbstractEventLoop | None:
    """This thread's event loop if it has one that is open (``run_sync`` leaves it set), else ``None``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None
    return None if loop.is_closed() or loop.is_running() else loop


def _at_exit() -> None:
    for model, kill in list(_MODELS.items()):
        try:
            close_blocking(model.aclose, stop_now=kill)
        except BaseException as error:  # exit must go on: fall back to killing the processes
            logger.debug("closing a model at exit failed (%r); killing its CLI processes", error)
            kill()
    for owner, kill_owner in list(_KILLS.items()):
        kill_owner(owner)
