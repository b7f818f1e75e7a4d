"""The run scope: which agent run a request belongs to, and what happens to the turns a run parked when it ends.

Each agent run holds a :class:`RunScope` around its requests (``ClaudeCodeModel._run_scope()``). When the run ends,
the turns it parked (waiting for tool results pydantic-ai runs) are kept for a while if it ended cleanly (a later run
continues them: ``DeferredToolRequests``, an output tool call) and closed at once if it failed or was cancelled.

Free of the rest of the turn machinery and of claude-agent-sdk: pydantic-ai enters the scope before the run's first
request, and that request starts its CLI before the SDK is imported (see :mod:`claudecode_model._sessions.early_cli`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudecode_model._turns.parking_lot import ParkingLot

__all__ = ["RunScope", "current_run_scope", "run_scope"]


class RunScope:
    """One agent run using the model (an identity: the parking lot knows which turns each run parked)."""

    def __init__(self, started: float | None = None) -> None:
        self.unrequested_since = started
        """When the model started preparing for the run (``time.monotonic()``; its first request's imports
        happen then), until the run's first request takes it as its own start (see :meth:`first_request_start`)."""

    def first_request_start(self) -> float | None:
        """For the run's first request: when the model started working for it (``time.monotonic()``); ``None``
        for later requests."""
        started, self.unrequested_since = self.unrequested_since, None
        return started


_CURRENT_SCOPE: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar(
    "claudecode_model_run_scope", default=None
)


def current_run_scope() -> RunScope | None:
    """The scope of the agent run this request belongs to (``None`` outside an agent run, or in a durable one)."""
    return _CURRENT_SCOPE.get()


@asynccontextmanager
async def run_scope(
    lot: Callable[[], ParkingLot[Any] | None],
    keep_for: Callable[[], float | None],
    *,
    started: float | None = None,
) -> AsyncIterator[None]:
    """Hold an agent run's parked turns: when the run ends, turns it parked in ``lot()`` (``None``: the model has
    parked nothing yet) are kept for ``keep_for()`` seconds if it ended cleanly and closed at once if it failed or
    was cancelled. ``started``: when the model began preparing for the run (``time.monotonic()``)."""
    scope = RunScope(started)
    token = _CURRENT_SCOPE.set(scope)
    failed = True
    try:
        yield
        failed = False
    finally:
        with contextlib.suppress(ValueError):  # exited in another context than entered: nothing to restore
            _CURRENT_SCOPE.reset(token)
        parked = lot()
        if parked is not None:
            for turn in parked.owned_by(scope):
                if failed:
                    await parked.close(turn)
                else:
                    parked.extend(turn, keep_for(), owner=None)
