"""The one place a request's errors become this package's typed errors: :func:`mapping_errors`, a context manager
around the start of a turn, the acquisition of its session and the turn itself, as pydantic-ai's
``map_api_errors`` wraps ``AnthropicModel``'s request and stream.

What each exception means is answered in :mod:`claudecode_model._stream.errors` (``map_error``, ``timeout_error``)
and :mod:`claudecode_model._stream.failures`; here it is decided which question applies: the request's time ran
out (while it waited for a process slot, or not), the turn's tool router failed for good, the turn's messages say
what failed, or the exception itself does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from claude_agent_sdk.types import Message

from claudecode_model._stream.errors import map_error, timeout_error
from claudecode_model._stream.failures import classify_failed_turn
from claudecode_model._stream.translator import TurnOutcome
from claudecode_model.exceptions import ClaudeCodeError, ClaudeCodeInactivityError, CLITimeoutError

__all__ = ["ErrorMap", "RunningTurn", "mapping_errors"]


def _no_slot_error() -> CLITimeoutError | None:
    return None


@dataclass(frozen=True)
class RunningTurn:
    """What a running turn adds to its errors: what the CLI said, and what the turn does when one occurs."""

    outcome: TurnOutcome
    messages: Sequence[Message]
    """The SDK messages of the turn so far (a failed turn is classified by them)."""
    fatal_error: Callable[[], BaseException | None]
    """The error that ended the turn's tool calls for good, if one did (it wins over what the CLI then did)."""
    failed: Callable[[bool], None]
    """Told that the turn failed, and whether its time ran out."""
    spent: Callable[[BaseException], object]
    """Notes on an error what the turn spent so far."""
    model_used: Callable[[], str]
    """The model the CLI used, as far as the turn knows it yet (errors name it)."""


@dataclass
class ErrorMap:
    """How the errors of one request are mapped."""

    model_name: str
    """The model errors name until a running turn knows the one the CLI used."""
    stderr: deque[str]
    """The CLI's last stderr lines (a new process of the request writes them here)."""
    timeout: float | None
    """The request's timeout in seconds (the message of a timeout)."""
    deadline: asyncio.Timeout | None = None
    """The scope of the request's time: a ``TimeoutError`` means the time is up only once it expired (``None``: the
    time is up on any ``TimeoutError``)."""
    slot_error: Callable[[], CLITimeoutError | None] = field(default=_no_slot_error)
    """The error of a request whose time ran out while it waited for a process slot (``None``: it did not)."""
    turn: RunningTurn | None = None
    """The turn, once it runs."""

    def time_is_up(self, error: BaseException) -> bool:
        """Whether ``error`` is the request's time running out."""
        return isinstance(error, TimeoutError) and (self.deadline is None or self.deadline.expired())

    def mapped(self, error: BaseException) -> BaseException:
        """The typed error ``error`` means (``error`` itself when it is one already, or a cancellation)."""
        turn = self.turn
        if turn is not None:
            out_of_time = isinstance(error, ClaudeCodeInactivityError) or self.time_is_up(error)
            turn.failed(out_of_time)
            fatal = turn.fatal_error()
            if fatal is not None and isinstance(error, Exception) and not out_of_time:
                return fatal
        mapped = self._typed(error)
        if turn is not None:
            turn.spent(mapped)
        return mapped

    def _typed(self, error: BaseException) -> BaseException:
        if isinstance(error, ClaudeCodeInactivityError):
            return error  # the turn's own bound, raised by its watchdog
        if self.time_is_up(error):
            return self.slot_error() or timeout_error(self.timeout or 0)
        turn = self.turn
        model_name = self.model_name if turn is None else turn.model_used()
        if turn is not None and isinstance(error, Exception) and not isinstance(error, ClaudeCodeError):
            classified = classify_failed_turn(turn.messages, model_name)
            if classified is not None:
                return classified
        return map_error(
            error, outcome=turn.outcome if turn is not None else None, stderr=self.stderr, model_name=model_name
        )


@contextmanager
def mapping_errors(errors: ErrorMap, *, only_time: bool = False) -> Iterator[None]:
    """Raise the typed error of what the block raises (see :meth:`ErrorMap.mapped`); ``only_time``: map only the
    request's time running out, and let every other exception through as it is. A generator left early
    (``GeneratorExit``) is not an error."""
    try:
        yield
    except GeneratorExit:
        raise
    except BaseException as error:
        if only_time and not errors.time_is_up(error):
            raise
        mapped = errors.mapped(error)
        if mapped is error:
            raise
        raise mapped from error
