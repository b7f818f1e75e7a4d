"""The inactivity bound of a turn in flight (:class:`InactivityWatchdog`).

Every message the CLI sends counts as activity (stream events included, also those a request that does not stream
drops; keep-alive ``ping`` events excepted): the session's owner task reports each one (``CLISession.observer``).
While a tool call is open (Claude called a tool and its result has not come back: the agent's tools, parked calls
waiting for pydantic-ai, approvals, built-in tools, subagents) the bound is paused, so long tool calls are never cut.
The CLI's ``api_retry`` notices are no activity (a stall that every attempt repeats ends within the bound), but the
backoff each one announces is not counted as silence. When the bound fires, the
turn's consumer gets :class:`~claudecode_model.exceptions.ClaudeCodeInactivityError` and the turn is stopped like a
timed-out one.
"""

from __future__ import annotations

import asyncio
import logging

from claude_agent_sdk import AssistantMessage, StreamEvent, SystemMessage, ToolResultBlock, ToolUseBlock, UserMessage
from claude_agent_sdk.types import Message

from claudecode_model._sessions.session import CLISession
from claudecode_model.exceptions import ClaudeCodeInactivityError

__all__ = ["InactivityWatchdog"]

logger = logging.getLogger(__name__)


class InactivityWatchdog:
    """Stops a turn whose CLI sends nothing for ``timeout`` seconds while no tool call is open."""

    def __init__(self, session: CLISession, timeout: float, model_name: str) -> None:
        self._session = session
        self._loop = session.loop
        self.timeout = timeout
        self._model_name = model_name
        self._heard = self._loop.time()
        self._open_calls: set[str] = set()
        self._handle: asyncio.TimerHandle | None = None
        self.fired = False

    def start(self) -> None:
        """Watch from now (the turn's message is being sent)."""
        self._heard = self._loop.time()
        self._session.observer = self.heard
        self._schedule(self._heard + self.timeout)

    def stop(self) -> None:
        """Stop watching (the turn ended, failed or was stopped)."""
        if self._session.observer == self.heard:
            self._session.observer = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def heard(self, message: Message) -> None:
        """The CLI sent ``message`` (called by the session's owner task for each one)."""
        if isinstance(message, StreamEvent) and message.event.get("type") == "ping":
            return  # a keep-alive says nothing of progress
        if isinstance(message, SystemMessage) and message.subtype == "api_retry":
            # A retry is no progress (a stall that every attempt repeats must end within the bound), but the CLI's
            # announced backoff before its next attempt is not silence either.
            delay = message.data.get("retry_delay_ms")
            if isinstance(delay, int | float) and delay > 0:
                self._heard += delay / 1000
            return
        self._heard = self._loop.time()
        match message:
            case AssistantMessage():
                self._open_calls.update(block.id for block in message.content if isinstance(block, ToolUseBlock))
            case UserMessage() if not isinstance(message.content, str):
                for block in message.content:
                    if isinstance(block, ToolResultBlock):
                        self._open_calls.discard(block.tool_use_id)
            case StreamEvent() if message.parent_tool_use_id is None and message.event.get("type") == "message_start":
                # A new API request of the main loop: the CLI sent every result of the calls before it.
                self._open_calls.clear()

    @property
    def paused(self) -> bool:
        """Whether a tool call is open (the CLI waits for a tool, not for the API)."""
        return bool(self._open_calls) or self._session.waiting_for_tools

    def _schedule(self, when: float) -> None:
        self._handle = self._loop.call_at(when, self._check)

    def _check(self) -> None:
        self._handle = None
        now = self._loop.time()
        if self.paused:
            self._schedule(now + self.timeout)
            return
        if now - self._heard < self.timeout:
            self._schedule(self._heard + self.timeout)
            return
        self._fire(now - self._heard)

    def _fire(self, silent: float) -> None:
        error = ClaudeCodeInactivityError(
            self._model_name,
            f"Claude Code sent nothing for {silent:.0f} s while no tool was running (the API stalled); the CLI "
            f"was stopped (claude_code_inactivity_timeout={self.timeout:g})",
            timeout=self.timeout,
        )
        if not self._session.fail_turn(error):
            self._schedule(self._loop.time() + 1.0)  # the session has not taken the turn up yet
            return
        self.fired = True
        self.stop()
        logger.warning(
            "Claude Code sent nothing for %.0f s while no tool ran (claude_code_inactivity_timeout=%g): the turn is "
            "stopped",
            silent,
            self.timeout,
        )
