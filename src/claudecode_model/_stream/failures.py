"""What a failed turn was: classifying the CLI's error results and the SDK's exceptions.

A failed turn ends with a synthetic assistant message (``error=<kind>``) and an error result whose text, status and
``terminal_reason`` say what happened; the CLI may also have reported a rate-limit event. Some failures need more than
the HTTP status to be classified right:

- "Prompt is too long" is a context-window error (not transient, whatever status the stream carried), with the sizes;
- "Not logged in" has no status at all, and is an authentication error that should say how to log in;
- a usage or rate limit (the subscription's 5-hour limit included) is a 429 whose reset time the CLI knows;
- exhausted usage credits are a 429 too, but one that waiting does not clear: a quota error.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from claude_agent_sdk import AssistantMessage, RateLimitEvent, ResultMessage
from claude_agent_sdk import CLIConnectionError as SDKCLIConnectionError
from claude_agent_sdk import CLIJSONDecodeError as SDKCLIJSONDecodeError

from claudecode_model._compat import api_error_fields
from claudecode_model.exceptions import (
    CREDITS_REQUIRED,
    ClaudeCodeAPIError,
    ClaudeCodeAuthenticationError,
    ClaudeCodeContextWindowExceededError,
    ClaudeCodeError,
    ClaudeCodeQuotaExceededError,
    ClaudeCodeRateLimitError,
    CLIConnectionError,
    CLIResponseParseError,
)

__all__ = ["LOGIN_HINT", "classify_failed_turn", "map_sdk_error"]

LOGIN_HINT = "Log in with `claudecode-model login` (the bundled CLI's `claude auth login`), or set ANTHROPIC_API_KEY."

_TOO_LONG_SIZES = (
    re.compile(r"~?\s*([\d,]+)\s*tokens\s*\(limit\s*([\d,]+)\)"),  # the CLI's own wording
    re.compile(r"([\d,]+)\s*tokens\s*>\s*([\d,]+)\s*maximum"),  # the API's wording
)
_LEGACY_USAGE_LIMIT = re.compile(r"usage limit reached\|(\d{9,})", re.I)
_NOT_LOGGED_IN = re.compile(r"not logged in|please run /login|invalid api key|oauth token has expired", re.I)


def classify_failed_turn(messages: Sequence[Any], model_name: str) -> ClaudeCodeAPIError | None:
    """The error for a turn whose messages end in an error result, where the status alone would misclassify it.

    ``None`` when the turn did not fail, or when its HTTP status says all there is to say.
    """
    result = next((m for m in reversed(messages) if isinstance(m, ResultMessage)), None)
    if result is None or not result.is_error:
        return None
    kinds = {m.error for m in messages if isinstance(m, AssistantMessage) and m.error}
    rejected = [
        m.rate_limit_info for m in messages if isinstance(m, RateLimitEvent) and m.rate_limit_info.status == "rejected"
    ]
    text = result.result or ""
    details = _result_details(result)
    if result.terminal_reason == "prompt_too_long" or text.lower().startswith("prompt is too long"):
        return _context_window_error(model_name, text, details)
    if "authentication_failed" in kinds or (result.api_error_status is None and _NOT_LOGGED_IN.search(text)):
        return ClaudeCodeAuthenticationError(
            result.api_error_status or 401, model_name, text, cli_message=text, result=details, hint=LOGIN_HINT
        )
    reported = next(
        (api_error_fields(m) for m in reversed(messages) if isinstance(m, AssistantMessage) and m.error), {}
    )
    codes = {reported.get("api_error_code"), *(info.raw.get("errorCode") for info in rejected)}
    if CREDITS_REQUIRED in codes or reported.get("api_error_type") == "billing_error":
        code = reported.get("api_error_code")
        return ClaudeCodeQuotaExceededError(
            result.api_error_status or 429,
            model_name,
            text,
            cli_message=text,
            result=details,
            details={"error_code": code} if isinstance(code, str) else None,
            provider_error_type=reported.get("api_error_type"),
            provider_error_code=code if isinstance(code, str) else None,
            hint="Usage credits are exhausted: waiting does not help.",
        )
    legacy = _LEGACY_USAGE_LIMIT.search(text)
    if rejected or legacy or "rate_limit" in kinds or result.api_error_status == 429:
        # Every rejected limit (the 5-hour one, a weekly one) must reset before a request goes through: the latest.
        resets = max((info.resets_at for info in rejected if info.resets_at), default=None)
        if resets is None and legacy is not None:
            resets = int(legacy.group(1))
        return _rate_limit_error(model_name, text, details, resets, reported.get("api_error_type"))
    return None


def _context_window_error(model_name: str, text: str, details: dict[str, Any]) -> ClaudeCodeContextWindowExceededError:
    sizes = next((match for pattern in _TOO_LONG_SIZES if (match := pattern.search(text))), None)
    prompt, limit = (
        (int(sizes.group(1).replace(",", "")), int(sizes.group(2).replace(",", ""))) if sizes else (None, None)
    )
    summary = f"the prompt is {prompt} tokens, the limit {limit}" if sizes else "the prompt is too long"
    error = ClaudeCodeContextWindowExceededError(
        400,
        model_name,
        text,
        cli_message=text,
        result=details,
        hint=f"Context window exceeded: {summary}; shorten the history or the tool results.",
    )
    error.prompt_tokens, error.limit_tokens = prompt, limit
    return error


def _rate_limit_error(
    model_name: str, text: str, details: dict[str, Any], resets: int | None, error_type: object = None
) -> ClaudeCodeRateLimitError:
    resets_at = datetime.fromtimestamp(resets, UTC) if resets is not None else None
    error = ClaudeCodeRateLimitError(
        429,
        model_name,
        text,
        cli_message=text,
        result=details,
        retry_after=max(0.0, resets - time.time()) if resets is not None else None,
        provider_error_type=error_type if isinstance(error_type, str) else None,
        hint=f"The limit resets at {resets_at.isoformat(timespec='minutes')}." if resets_at else None,
    )
    error.resets_at = resets_at
    return error


def _result_details(result: ResultMessage) -> dict[str, Any]:
    fields = ("subtype", "is_error", "result", "api_error_status", "terminal_reason", "session_id", "errors")
    return {name: getattr(result, name, None) for name in fields}


def map_sdk_error(error: BaseException, stderr: str) -> ClaudeCodeError | None:
    """The library's error for the SDK's transport and parse errors (``None`` for anything else)."""
    detail = f"\n{stderr}" if stderr else ""
    match error:
        case SDKCLIJSONDecodeError() if "maximum buffer size" in str(error):
            return CLIResponseParseError(
                "A message from the Claude Code CLI (a reply with its tool calls' arguments, or a tool result) was "
                f"larger than this package reads: {error}{detail}"
            )
        case SDKCLIJSONDecodeError():
            return CLIResponseParseError(f"Claude Code CLI produced output that could not be read: {error}{detail}")
        case SDKCLIConnectionError():
            return CLIConnectionError(f"Talking to the Claude Code CLI failed: {error}{detail}", stderr=stderr or None)
        case _:
            return None
