"""The constructor's limits on a model's CLI processes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProcessLimits"]


@dataclass(frozen=True)
class ProcessLimits:
    """How many CLI processes a model keeps idle, for how long, starts ahead, and runs at most."""

    keep_sessions: int | None
    """Idle processes kept for follow-up turns and started ahead, at most (``None``: within the program's shared
    budget, :data:`claudecode_model._sessions.idle_budget.DEFAULT_IDLE_CLIS`)."""
    idle_timeout: float
    spare_sessions: int
    """Processes started ahead per session signature."""
    max_processes: int | None
    """The cap on live processes (``None``: from the machine)."""
