"""Which event loops pause between calls: a ``run_sync`` program's loop runs only during its calls.

A spare asked for on such a loop would wait out its start delay while the loop is paused, and start with the next
call, which then waits for it. The pool therefore has each spare's delay looked at from the clock's thread
(:mod:`claudecode_model._process.clock`) when it ends: a loop that is not running then, and not closed, pauses
between calls, and is known to from then on (a ``run_sync`` program keeps calling ``run_sync``). An async program's
loop runs until the program is done (``is_running()`` stays true while a coroutine blocks it), so it is never taken
for one that pauses, however late its timers fire.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref

from claudecode_model._process.clock import call_at

__all__ = ["look_at", "pauses"]

logger = logging.getLogger(__name__)

_PAUSING: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_lock = threading.Lock()


def pauses(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` was seen paused between calls (not running, not closed)."""
    with _lock:
        return loop in _PAUSING


def look_at(loop: asyncio.AbstractEventLoop, when: float) -> None:
    """Look at ``loop`` from the clock's thread at ``when`` (``time.monotonic()``): if it is not running then, it
    pauses between calls. The loop is held weakly meanwhile."""
    if pauses(loop):
        return
    held = weakref.ref(loop)
    call_at(when, lambda: _look(held))


def _look(held: weakref.ref[asyncio.AbstractEventLoop]) -> None:
    loop = held()
    if loop is None or loop.is_closed() or loop.is_running():
        return
    with _lock:
        if loop in _PAUSING:
            return
        _PAUSING.add(loop)
    logger.debug("the event loop pauses between calls (run_sync): spares start at once and boot meanwhile")
