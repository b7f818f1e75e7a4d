"""The error type of the Tavily tools and the mapping from tavily-python's exceptions."""

from __future__ import annotations

import enum

import httpx

from claudecode_model.exceptions import ClaudeCodeError

__all__ = ["RETRYABLE_ERROR_TYPES", "TavilyAPIError", "TavilyErrorType", "format_error_message"]


class TavilyErrorType(enum.StrEnum):
    """What went wrong in a Tavily call; the value is what ``エラータイプ:`` shows."""

    AUTH_ERROR = "AUTH_ERROR"
    """The API key is missing (checked before any request) or the API answered 401."""
    FORBIDDEN_ERROR = "FORBIDDEN_ERROR"
    """The API answered 403, 432 or 433: the key may not use this endpoint, or its plan limit is spent."""
    RATE_LIMIT_ERROR = "RATE_LIMIT_ERROR"
    """The API answered 429 (retried with backoff before it is reported)."""
    VALIDATION_ERROR = "VALIDATION_ERROR"
    """The tool arguments break the contract's rules, or the API answered 400."""
    SERVER_ERROR = "SERVER_ERROR"
    """The API answered with a 5xx status (retried with backoff before it is reported)."""
    TIMEOUT_ERROR = "TIMEOUT_ERROR"
    """The request did not finish within the configured timeout (retried with backoff before reporting)."""
    NETWORK_ERROR = "NETWORK_ERROR"
    """The API could not be reached (connection refused, DNS failure, broken connection)."""
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    """Any other HTTP status, or a response that could not be understood."""


RETRYABLE_ERROR_TYPES: frozenset[TavilyErrorType] = frozenset(
    {TavilyErrorType.RATE_LIMIT_ERROR, TavilyErrorType.SERVER_ERROR, TavilyErrorType.TIMEOUT_ERROR}
)
"""The error types that are retried with exponential backoff."""


def format_error_message(error_type: TavilyErrorType, message: str) -> str:
    """The contract's error text (section 5.3)."""
    return f"Tavily API エラー: {message}\nエラータイプ: {error_type}"


class TavilyAPIError(ClaudeCodeError):
    """A Tavily tool call failed; ``str(error)`` is the contract's formatted error message.

    Attributes:
        error_type: What went wrong.
        message: The bare message, without the contract's formatting.
        status_code: The HTTP status the API answered with, when there was one.
        attempts: How many requests were made before giving up (0 when the call failed before any request).
    """

    def __init__(
        self,
        error_type: TavilyErrorType | str,
        message: str,
        *,
        status_code: int | None = None,
        attempts: int = 0,
    ) -> None:
        self.error_type = TavilyErrorType(error_type)
        self.message = message
        self.status_code = status_code
        self.attempts = attempts
        super().__init__(format_error_message(self.error_type, message))

    @property
    def retryable(self) -> bool:
        """Whether the call is worth repeating after a pause."""
        return self.error_type in RETRYABLE_ERROR_TYPES

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.error_type, self.message, self.status_code, self.attempts))


def _rebuild(error_type: TavilyErrorType, message: str, status_code: int | None, attempts: int) -> TavilyAPIError:
    return TavilyAPIError(error_type, message, status_code=status_code, attempts=attempts)


def _with_detail(summary: str, detail: object) -> str:
    text = str(detail).strip() if detail is not None else ""
    return f"{summary}: {text}" if text else summary


def scrub_secret(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` masked (used on anything the server echoes back)."""
    if not secret:
        return text
    return text.replace(secret, "***")


def map_exception(exc: Exception, *, api_key: str | None, attempts: int) -> TavilyAPIError | None:
    """The :class:`TavilyAPIError` for an exception from ``AsyncTavilyClient``, or ``None`` if it is not one.

    tavily-python raises its own classes for 401/429/400/403/432/433, ``httpx.HTTPStatusError`` for other
    statuses, its own ``TimeoutError`` for timeouts and lets httpx transport errors through unwrapped.
    Whatever the server echoed back is scrubbed of ``api_key``.
    """
    from tavily import errors as tavily_errors

    if isinstance(exc, TavilyAPIError):
        return exc
    status_code: int | None = None
    match exc:
        case tavily_errors.InvalidAPIKeyError():
            error_type, message, status_code = (
                TavilyErrorType.AUTH_ERROR,
                _with_detail("the API key was rejected (HTTP 401)", exc),
                401,
            )
        case tavily_errors.UsageLimitExceededError():
            error_type, message, status_code = (
                TavilyErrorType.RATE_LIMIT_ERROR,
                _with_detail("rate limit exceeded (HTTP 429)", exc),
                429,
            )
        case tavily_errors.BadRequestError():
            error_type, message, status_code = (
                TavilyErrorType.VALIDATION_ERROR,
                _with_detail("the API rejected the request (HTTP 400)", exc),
                400,
            )
        case tavily_errors.ForbiddenError():
            error_type = TavilyErrorType.FORBIDDEN_ERROR
            message = _with_detail("access denied (HTTP 403/432/433: endpoint not allowed or plan limit reached)", exc)
        case tavily_errors.TimeoutError() | httpx.TimeoutException():
            error_type, message = TavilyErrorType.TIMEOUT_ERROR, _with_detail("request timed out", exc)
        case httpx.HTTPStatusError():
            status_code = exc.response.status_code
            error_type = TavilyErrorType.SERVER_ERROR if status_code >= 500 else TavilyErrorType.UNKNOWN_ERROR
            message = _with_detail(f"HTTP {status_code} from {exc.request.url.path}", _response_text(exc.response))
        case httpx.RequestError():
            error_type = TavilyErrorType.NETWORK_ERROR
            message = _with_detail(f"cannot reach the Tavily API ({type(exc).__name__})", exc)
        case ValueError():
            # A 200 response whose body is not JSON.
            error_type = TavilyErrorType.UNKNOWN_ERROR
            message = _with_detail("the API answered with an unreadable response", exc)
        case _:
            return None
    return TavilyAPIError(error_type, scrub_secret(message, api_key), status_code=status_code, attempts=attempts)


def _response_text(response: httpx.Response) -> str:
    try:
        text = response.text
    except httpx.ResponseNotRead:
        return ""
    return " ".join(text.split())[:500]
