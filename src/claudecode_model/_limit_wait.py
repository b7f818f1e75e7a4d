"""Waiting out a subscription's usage limit before asking again (``claude_code_limit_reset_wait``).

A request refused for a usage limit (the 5-hour or weekly limit: ``ClaudeCodeRateLimitError`` with ``resets_at``)
is asked again once the limit resets, when the reset is within the setting's seconds (all waits of one request
together); otherwise the error is raised as it is. No tokens are spent on a refused request, so asking again does not
pay twice. A WARNING says until when the request waits. Inside a DBOS step the wait is part of the step: DBOS records
only the step's result, and a worker that dies meanwhile runs the step again, which waits again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from claudecode_model.exceptions import ClaudeCodeRateLimitError

__all__ = ["RESET_MARGIN_SECONDS", "waiting_out_limits"]

logger = logging.getLogger(__name__)

RESET_MARGIN_SECONDS = 1.0
"""Waited beyond a limit's reset time, so that the next request does not arrive just before it."""

_T = TypeVar("_T")


async def waiting_out_limits(settings: Mapping[str, Any], attempt: Callable[[], Awaitable[_T]]) -> _T:
    """``attempt()``, asked again after each usage limit it hits resets, within ``claude_code_limit_reset_wait``."""
    budget = float(settings.get("claude_code_limit_reset_wait") or 0.0)
    while True:
        try:
            return await attempt()
        except ClaudeCodeRateLimitError as error:
            wait = error.retry_after
            if wait is None or error.resets_at is None or wait + RESET_MARGIN_SECONDS > budget:
                raise
            budget -= wait + RESET_MARGIN_SECONDS
            logger.warning(
                "Claude Code's usage limit is reached: waiting until %s (%.0f s) to ask again "
                "(claude_code_limit_reset_wait)",
                error.resets_at.isoformat(timespec="seconds"),
                wait + RESET_MARGIN_SECONDS,
            )
            await asyncio.sleep(wait + RESET_MARGIN_SECONDS)
