"""The constructor's limits on a model's CLI processes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProcessLimits"]


@dataclass(frozen=True)
class ProcessLimits:
    """How many CLI processes a model keeps idle, for how long, starts ahead, and runs at most."""

    keep_sessions: int | None
    """Idle processes kept for follow-up turns (``None``: the model's default, and more for a while
    when no new process needs their slot)."""
    idle_timeout: float
    spare_sessions: int
    """Processes started ahead per session signature."""
    max_processes: int | None
    """The cap on live processes (``None``: from the machine)."""
