"""The one place that reaches into pydantic-ai's private run-context variable.

``Model.request()`` receives no ``RunContext``; inside an agent run it is still reachable through the context
variable pydantic-ai sets. Kept in one small module so a change in pydantic-ai touches one line.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import RunContext


def current_run_context() -> RunContext[Any] | None:
    """The run context of the agent run in progress on this task, if any."""
    try:
        from pydantic_ai._run_context import get_current_run_context
    except ImportError:  # pragma: no cover - depends on the installed pydantic-ai
        return None
    context = get_current_run_context()
    return context if isinstance(context, RunContext) else None
