"""From what went wrong in a CLI turn to this package's typed errors: plain functions, one per question.

:func:`map_error` answers "what does this exception raised during a turn mean", :func:`result_error` "did a turn
that ran to its end succeed". Both read the API error the CLI reported in the stream or in its result message, so
an HTTP failure of the API surfaces as the same typed error pydantic-ai's own Anthropic model raises.
"""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Iterable
from typing import Any, cast

from claude_agent_sdk import CLINotFoundError as SDKCLINotFoundError
from claude_agent_sdk import ProcessError as SDKProcessError
from claude_agent_sdk import ResultMessage

from claudecode_model._stream.failures import map_sdk_error
from claudecode_model._stream.translator import TurnOutcome
from claudecode_model.exceptions import (
    ClaudeCodeConnectionError,
    ClaudeCodeError,
    ClaudeCodeOverloadedError,
    CLIInterruptedError,
    CLINotFoundError,
    CLIProcessError,
    CLITimeoutError,
    api_error_for_status,
)

__all__ = ["api_error", "exit_description", "map_error", "result_error", "timeout_error"]

logger = logging.getLogger(__name__)


def map_error(
    error: BaseException, *, outcome: TurnOutcome | None, stderr: Iterable[str], model_name: str
) -> BaseException:
    """The typed error for an exception raised while starting or running a turn (``error`` itself if ours already,
    or if it is a cancellation, ``GeneratorExit`` or ``KeyboardInterrupt``)."""
    if isinstance(error, ClaudeCodeError) or not isinstance(error, Exception):
        return error
    if isinstance(error, SDKCLINotFoundError):
        return CLINotFoundError(str(error))
    if (sdk_error := map_sdk_error(error, "\n".join(stderr))) is not None:
        return sdk_error
    if outcome is not None:
        reported = api_error(outcome, model_name=model_name)
        if reported is not None:
            return reported
    if isinstance(error, SDKProcessError):
        # The SDK's own text only says to look at stderr (whose lines are here): it is replaced, not repeated.
        stderr_text = "\n".join(stderr) or (error.stderr if error.stderr != _SDK_STDERR_PLACEHOLDER else None)
        return CLIProcessError(
            f"Claude Code CLI failed: {exit_description(error.exit_code)}"
            + (f"\n{stderr_text}" if stderr_text else ""),
            exit_code=error.exit_code,
            stderr=stderr_text,
        )
    return CLIProcessError(f"Claude Code CLI failed: {error!r}")


_SDK_STDERR_PLACEHOLDER = "Check stderr output for details"


def exit_description(exit_code: int | None) -> str:
    """How the CLI process ended, by its exit status (negative: the signal that killed it)."""
    if exit_code is None:
        return "the process ended"
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"the process was killed by {name} (exit status {exit_code})"
    return f"the process exited with status {exit_code}"


def api_error(outcome: TurnOutcome, *, model_name: str) -> ClaudeCodeError | None:
    """The API error the CLI reported for this turn (an HTTP status or a connection failure), if any."""
    result = outcome.result
    status = result.api_error_status if result is not None else None
    message = outcome.api_error_text or (result.result if result is not None else None) or ""
    if status is not None:
        return api_error_for_status(
            status,
            model_name,
            message,
            cli_message=message,
            result=_result_dict(result),
            in_stream=outcome.api_error_in_stream,
            error_type=outcome.api_error_type,
            error_code=outcome.api_error_code,
        )
    if outcome.api_error_kind is not None or (result is not None and result.terminal_reason == "api_error"):
        return ClaudeCodeConnectionError(model_name, message or "Claude Code could not reach the API")
    return None


def result_error(outcome: TurnOutcome, *, model_name: str) -> ClaudeCodeError | None:
    """``None`` when a turn that ran to its end succeeded, else the typed error its result message means."""
    result = outcome.result
    if result is None:
        return CLIProcessError("Claude Code ended the turn without a result")
    if not result.is_error and result.subtype == "success":
        return None
    reported = api_error(outcome, model_name=model_name)
    if reported is not None:
        return reported
    if result.terminal_reason in ("aborted_streaming", "aborted_tools"):
        return CLIInterruptedError(f"Claude Code turn was interrupted ({result.terminal_reason})")
    if result.is_error and result.subtype == "success":
        return _contradictory(outcome, model_name)
    detail = "; ".join(result.errors or []) or result.result or result.subtype
    return CLIProcessError(f"Claude Code turn failed ({result.subtype}, {result.terminal_reason}): {detail}")


_ANSWER_STOPS = frozenset({"end_turn", "stop_sequence", "max_tokens"})


def _contradictory(outcome: TurnOutcome, model_name: str) -> ClaudeCodeOverloadedError | None:
    """A result that says both ``is_error`` and ``success`` with no API error (seen under usage pressure): the answer
    it holds is kept (``outcome.recovered``, with a WARNING), else it is a retryable overload."""
    result = outcome.result
    assert result is not None
    stop = result.stop_reason or outcome.last_stop_reason
    answered = result.structured_output is not None or (bool(result.result) and stop in _ANSWER_STOPS)
    if answered and outcome.api_error_kind is None:
        outcome.recovered = True
        logger.warning(
            "Claude Code reported an error result with subtype 'success' (terminal reason %s); it holds an answer, "
            "which is kept",
            result.terminal_reason,
        )
        return None
    text = result.result or "Claude Code reported an error result with subtype 'success' and no answer"
    return ClaudeCodeOverloadedError(
        529,
        model_name,
        text,
        cli_message=text,
        result=_result_dict(result),
        hint="Claude Code reported an error without an answer or an API error (seen under load): retry.",
    )


def timeout_error(timeout: float) -> CLITimeoutError:
    """The error of a turn that did not finish within ``timeout`` seconds (its CLI is stopped)."""
    return CLITimeoutError(f"Claude Code did not finish within {timeout:g} s; the CLI was stopped", timeout=timeout)


def _result_dict(result: ResultMessage | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return cast("dict[str, Any]", json.loads(json.dumps(result.__dict__, default=str)))
