"""Tool logging of section 5.1 of the contract: one record when a tool starts, one when it is done."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ToolStatus", "log_verbose_tool_done", "log_verbose_tool_start"]

logger = logging.getLogger("claudecode_model.tavily")

ToolStatus = Literal["success", "failed"]


def log_verbose_tool_start(tool_name: str, arguments: Mapping[str, object]) -> None:
    """Log that ``tool_name`` starts with ``arguments`` (the query or URLs; never credentials)."""
    logger.info(
        "tool start: %s %s",
        tool_name,
        dict(arguments),
        extra={"tool_name": tool_name, "tool_arguments": dict(arguments)},
    )


def log_verbose_tool_done(tool_name: str, status: ToolStatus, execution_time_ms: float) -> None:
    """Log that ``tool_name`` finished with ``status`` after ``execution_time_ms`` milliseconds."""
    logger.info(
        "tool done: %s %s %.1f ms",
        tool_name,
        status,
        execution_time_ms,
        extra={"tool_name": tool_name, "tool_status": status, "execution_time_ms": execution_time_ms},
    )
