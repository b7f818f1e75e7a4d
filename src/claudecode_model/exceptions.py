"""The exception hierarchy of claudecode-model.

Everything the library raises on purpose derives from :class:`ClaudeCodeError`. API status errors are also
pydantic-ai :class:`~pydantic_ai.exceptions.ModelHTTPError` instances (and the matching error category, such as
:class:`~pydantic_ai.exceptions.ModelRateLimitError`), so ``FallbackModel`` and retry logic treat them like any other
provider's errors.

The tree (with the other classes each one derives from)::

    * ClaudeCodeError
      * BuiltinDecisionError (also UserError)
      * CLIExecutionError
        * CLIProcessError
          * CLIConnectionError
        * CLITimeoutError (also TimeoutError)
      * CLIInterruptedError
      * CLINotFoundError
      * CLIResponseParseError
      * ClaudeCodeAPIError (also ModelHTTPError)
        * ClaudeCodeAuthenticationError (also ModelAuthenticationError)
        * ClaudeCodeOverloadedError (also ModelOverloadedError)
        * ClaudeCodeQuotaExceededError (also ModelQuotaExceededError)
        * ClaudeCodeRateLimitError (also ModelRateLimitError)
        * ClaudeCodeRequestRejectedError (also ModelRequestRejectedError)
          * ClaudeCodeContextWindowExceededError (also ModelContextWindowExceededError)
          * ClaudeCodeModelNotFoundError (also ModelNotFoundError)
        * ClaudeCodeServerError (also ModelServerError)
        * ClaudeCodeUnavailableError (also ModelUnavailableError)
      * ClaudeCodeConnectionError (also ModelConnectionError)
        * ClaudeCodeInactivityError (also ModelTimeoutError)
      * ClaudeCodeSettingsError (also UserError, ValueError)
      * DependencyResolutionError (also UserError)
      * IPCError
        * BridgeStartupError
        * IPCConnectionError
        * IPCMessageSizeError
        * IPCToolExecutionError
      * InvalidModelIdError (also UserError)
      * MessageConversionError
        * UnsupportedContentError
      * MissingDepsError (also NotImplementedError)
      * StructuredOutputError
      * ToolNotFoundError
      * ToolValidationError (also ValueError)
      * ToolsetNotRegisteredError
      * TypeHintResolutionError
      * UnsupportedDepsTypeError
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UserError,
)

if TYPE_CHECKING:
    from pydantic_ai.usage import RequestUsage

__all__ = [
    "BridgeStartupError",
    "BuiltinDecisionError",
    "CLIConnectionError",
    "CLIExecutionError",
    "CLIInterruptedError",
    "CLINotFoundError",
    "CLIProcessError",
    "CLIResponseParseError",
    "CLITimeoutError",
    "ClaudeCodeAPIError",
    "ClaudeCodeAuthenticationError",
    "ClaudeCodeConnectionError",
    "ClaudeCodeContextWindowExceededError",
    "ClaudeCodeError",
    "ClaudeCodeInactivityError",
    "ClaudeCodeModelNotFoundError",
    "ClaudeCodeOverloadedError",
    "ClaudeCodeQuotaExceededError",
    "ClaudeCodeRateLimitError",
    "ClaudeCodeRequestRejectedError",
    "ClaudeCodeServerError",
    "ClaudeCodeSettingsError",
    "ClaudeCodeUnavailableError",
    "DependencyResolutionError",
    "ErrorType",
    "IPCConnectionError",
    "IPCError",
    "IPCMessageSizeError",
    "IPCToolExecutionError",
    "InvalidModelIdError",
    "MessageConversionError",
    "MissingDepsError",
    "StructuredOutputError",
    "ToolNotFoundError",
    "ToolValidationError",
    "ToolsetNotRegisteredError",
    "TypeHintResolutionError",
    "UnsupportedContentError",
    "UnsupportedDepsTypeError",
    "api_error_for_status",
]


SPENT_FIELDS = ("usage", "cost_usd", "api_requests", "reached_model")
"""What an error raised from a turn says about what the turn spent (see :class:`ClaudeCodeError`)."""


class ClaudeCodeError(Exception):
    """Base class of every error claudecode-model raises on purpose.

    An error raised from a request's turn also says what the turn had spent when it failed, as far as the CLI
    reported it (``None`` on errors raised before a turn, such as a bad setting):

    - ``usage``: the tokens of the turn's API responses so far (a pydantic-ai ``RequestUsage``);
    - ``cost_usd``: the cost the CLI reported, else the list price of those tokens, else ``None``;
    - ``api_requests``: the API requests the CLI made in the turn, as seen in its stream (answered ones, and the
      failed attempts it retried or reported);
    - ``reached_model``: whether Claude produced anything in the turn (an answer started, tokens were counted, a cost
      was reported). ``False``: no model tokens were spent, so sending the same request again (a queue, a durable
      engine, ``FallbackModel``) does not pay twice.
    """

    usage: RequestUsage | None = None
    cost_usd: float | None = None
    api_requests: int | None = None
    reached_model: bool | None = None


# --- the CLI process -------------------------------------------------------------------------------------------


class ClaudeCodeSettingsError(ClaudeCodeError, UserError, ValueError):
    """A setting or constructor argument is invalid (the message names it and says what is allowed).

    Raised before any CLI process starts. Also a pydantic-ai ``UserError`` and a ``ValueError``.
    """


class BuiltinDecisionError(ClaudeCodeError, UserError):
    """A person's decision on a call of a Claude Code built-in tool cannot be carried out as given on this path.

    Raised before anything starts, so that no call runs that was not approved as it would run; the message says
    what to do instead (see ``docs/builtin-tools.md``). Also a pydantic-ai ``UserError``.
    """


class CLINotFoundError(ClaudeCodeError):
    """The Claude Code CLI could not be found; the message says where we looked and how to install it."""

    def __init__(self, message: str, *, searched: list[str] | None = None) -> None:
        super().__init__(message)
        self.searched: list[str] = list(searched or [])


ErrorType = Literal["timeout", "permission", "cli_not_found", "invalid_response", "unknown"]
"""The kinds of :class:`CLIExecutionError` (``error_type``)."""


class CLIExecutionError(ClaudeCodeError):
    """The CLI run failed: base of :class:`CLIProcessError` and :class:`CLITimeoutError`.

    ``exit_code``, ``stderr``, ``error_type`` and ``recoverable`` describe the failure where known.
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr: str | None = None,
        error_type: ErrorType | None = None,
        recoverable: bool = False,
    ) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.error_type = error_type
        self.recoverable = recoverable


class CLIProcessError(CLIExecutionError):
    """The CLI process failed to start or exited abnormally."""

    def __init__(self, message: str, *, exit_code: int | None = None, stderr: str | None = None) -> None:
        super().__init__(message, exit_code=exit_code, stderr=stderr)


class CLIConnectionError(CLIProcessError):
    """Talking to the CLI process failed (it closed its pipes, or never answered)."""


class CLIResponseParseError(ClaudeCodeError):
    """The CLI produced output that could not be understood (``raw_output``, when known)."""

    def __init__(self, message: str, *, raw_output: str = "") -> None:
        super().__init__(message)
        self.raw_output = raw_output


class CLITimeoutError(CLIExecutionError, TimeoutError):
    """A request did not finish within its timeout; the CLI process was stopped."""

    def __init__(self, message: str, *, timeout: float) -> None:
        super().__init__(message, error_type="timeout", recoverable=True)
        self.timeout = timeout


class CLIInterruptedError(ClaudeCodeError):
    """The CLI run was interrupted (for example by ``interrupt()``) before it produced a result."""


class StructuredOutputError(ClaudeCodeError):
    """Claude finished without producing the structured output the request asked for."""

    session_id: str | None = None
    num_turns: int | None = None
    duration_ms: int | None = None


class MessageConversionError(ClaudeCodeError):
    """A pydantic-ai message could not be converted for Claude Code."""


class UnsupportedContentError(MessageConversionError):
    """A user prompt holds content Claude Code cannot receive (the message names the type)."""


# --- API status errors -----------------------------------------------------------------------------------------


class ClaudeCodeAPIError(ClaudeCodeError, ModelHTTPError):
    """The Anthropic API answered the CLI with an error status.

    Also a pydantic-ai ``ModelHTTPError``: ``status_code`` and ``body`` carry the status and the CLI's message;
    ``provider_error_type`` the API's error ``type`` and ``provider_error_code`` its ``details.error_code`` where the
    CLI reported them, ``details`` the error's details as far as the CLI passes them on (its ``error_code``).
    """

    def __init__(
        self,
        status_code: int,
        model_name: str,
        body: object | None = None,
        *,
        cli_message: str | None = None,
        result: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        ModelHTTPError.__init__(self, status_code, model_name, body, **kwargs)
        self.cli_message = cli_message
        self.result = result
        self.details = details

    def __getstate__(self) -> dict[str, Any]:
        return {
            **super().__getstate__(),
            **_spent_state(self),
            "cli_message": self.cli_message,
            "result": self.result,
            "details": self.details,
        }


class ClaudeCodeAuthenticationError(ClaudeCodeAPIError, ModelAuthenticationError):
    """401/403: the API refused the credentials the CLI used."""


class ClaudeCodeRateLimitError(ClaudeCodeAPIError, ModelRateLimitError):
    """429: rate limited, or a usage limit of the subscription reached (such as the 5-hour limit).

    ``resets_at`` is when the limit resets, where the CLI says (``retry_after`` then holds the seconds until then).
    """

    resets_at: datetime | None = None


class ClaudeCodeQuotaExceededError(ClaudeCodeAPIError, ModelQuotaExceededError):
    """The account's usage credits or billing are exhausted (a 429 whose ``error_code`` is ``credits_required``,
    a ``billing_error``, a 402, a credit balance too low): waiting does not help, ``FallbackModel`` can move on."""


class ClaudeCodeOverloadedError(ClaudeCodeAPIError, ModelOverloadedError):
    """529: the API is overloaded."""


class ClaudeCodeUnavailableError(ClaudeCodeAPIError, ModelUnavailableError):
    """503: the API is unavailable."""


class ClaudeCodeServerError(ClaudeCodeAPIError, ModelServerError):
    """Any other 5xx status."""


class ClaudeCodeRequestRejectedError(ClaudeCodeAPIError, ModelRequestRejectedError):
    """Any other 4xx status."""


class ClaudeCodeModelNotFoundError(ClaudeCodeRequestRejectedError, ModelNotFoundError):
    """404: the API does not know the model (or the account has no access to it)."""


class ClaudeCodeContextWindowExceededError(ClaudeCodeRequestRejectedError, ModelContextWindowExceededError):
    """The prompt is longer than the model's context window; ``prompt_tokens`` and ``limit_tokens`` give the sizes
    where the CLI reported them. Not transient: retrying the same request fails the same way."""

    prompt_tokens: int | None = None
    limit_tokens: int | None = None


class ClaudeCodeConnectionError(ClaudeCodeError, ModelConnectionError):
    """The CLI could not reach the API (refused connection, DNS failure, dropped stream); no HTTP status."""

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), **_spent_state(self)}


class ClaudeCodeInactivityError(ClaudeCodeConnectionError, ModelTimeoutError):
    """The CLI sent nothing for ``timeout`` seconds while no tool was running (the API stalled, and the CLI's own
    retries did not end the silence): the turn was stopped. See ``claude_code_inactivity_timeout``.

    Also a pydantic-ai ``ModelTimeoutError`` (a ``ModelConnectionError``, ``phase="read"``): ``FallbackModel`` moves
    on, and a retry is a new request (check ``reached_model`` for whether this one spent tokens).
    """

    def __init__(self, model_name: str, message: str, *, timeout: float, **kwargs: Any) -> None:
        super().__init__(model_name, message, **{"phase": "read", **kwargs})
        self.timeout = timeout

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild_inactivity, (self.model_name, self.message, self.timeout), self.__getstate__()


def _rebuild_inactivity(model_name: str, message: str, timeout: float) -> ClaudeCodeInactivityError:
    return ClaudeCodeInactivityError(model_name, message, timeout=timeout)


def _spent_state(error: ClaudeCodeError) -> dict[str, Any]:
    """The spent fields set on ``error`` (kept when a durable engine pickles it)."""
    return {name: error.__dict__[name] for name in SPENT_FIELDS if name in error.__dict__}


class InvalidModelIdError(ClaudeCodeError, UserError):
    """A ``"claude-code:<model>"`` model id that names no model (or a model id that is not a Claude Code one)."""


ERROR_TYPE_STATUS_CODES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status of each Anthropic error ``type`` (what an error inside a stream is reported with)."""

CREDITS_REQUIRED = "credits_required"
"""The ``details.error_code`` of a 429 that only buying usage credits clears."""


def api_error_for_status(
    status_code: int,
    model_name: str,
    body: object | None = None,
    *,
    cli_message: str | None = None,
    result: dict[str, Any] | None = None,
    in_stream: bool = False,
    error_type: str | None = None,
    error_code: str | None = None,
) -> ClaudeCodeAPIError:
    """Build the API error class that matches the API's error as ``AnthropicModel`` classifies it: by its error
    ``type`` and ``details.error_code`` where known, else by ``status_code``.

    An error reported inside a stream gets the status its ``type`` has before a stream opens.
    """
    if in_stream and error_type in ERROR_TYPE_STATUS_CODES:
        status_code = ERROR_TYPE_STATUS_CODES[error_type]
    message = cli_message or (body if isinstance(body, str) else "")
    cls: type[ClaudeCodeAPIError]
    if (
        error_code == CREDITS_REQUIRED
        or error_type == "billing_error"
        or status_code == 402
        or "credit balance is too low" in message.lower()
    ):
        cls = ClaudeCodeQuotaExceededError
    elif error_type == "rate_limit_error":
        cls = ClaudeCodeRateLimitError
    elif error_type == "overloaded_error":
        cls = ClaudeCodeOverloadedError
    elif status_code in (401, 403):
        cls = ClaudeCodeAuthenticationError
    elif status_code == 404:
        cls = ClaudeCodeModelNotFoundError
    elif status_code == 429:
        cls = ClaudeCodeRateLimitError
    elif status_code == 529:
        cls = ClaudeCodeOverloadedError
    elif status_code == 503:
        cls = ClaudeCodeUnavailableError
    elif status_code >= 500:
        cls = ClaudeCodeServerError
    elif status_code >= 400:
        cls = ClaudeCodeRequestRejectedError
    else:
        cls = ClaudeCodeAPIError
    return cls(
        status_code,
        model_name,
        body,
        cli_message=cli_message,
        result=result,
        details={"error_code": error_code} if error_code else None,
        provider_error_type=error_type,
        provider_error_code=error_code,
        in_stream=in_stream,
    )


# --- tools ----------------------------------------------------------------------------------------------------


class ToolValidationError(ClaudeCodeError, ValueError):
    """A tool cannot be converted: empty name, no function, or a parameters schema that is not a dict."""


class UnsupportedDepsTypeError(ClaudeCodeError):
    """Dependencies of this type cannot be serialised (e.g. ``httpx.AsyncClient``, connections, file handles).

    ``type_name`` names the type. Given a bare type name as its only argument (as in earlier releases), the
    message is built from it.
    """

    def __init__(self, message: str, *, type_name: str | None = None) -> None:
        if type_name is None and message.isidentifier():
            type_name = message
            message = (
                f"Unsupported dependency type: {type_name}. Only serialisable types are supported: dict, list, "
                "tuple, str, int, float, bool, None, Enum, dataclass and pydantic BaseModel."
            )
        super().__init__(message)
        self.type_name = type_name


class ToolsetNotRegisteredError(ClaudeCodeError):
    """The request names function tools, but ``set_agent_toolsets()`` was never called (``requested_tools``)."""

    def __init__(self, message: str, *, requested_tools: list[str] | None = None) -> None:
        super().__init__(message)
        self.requested_tools = list(requested_tools or [])


class ToolNotFoundError(ClaudeCodeError):
    """The request names a function tool that no registered toolset holds (``missing_tools``, ``available_tools``)."""

    def __init__(
        self, message: str, *, missing_tools: list[str] | None = None, available_tools: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.missing_tools = list(missing_tools or [])
        self.available_tools = list(available_tools or [])


class TypeHintResolutionError(ClaudeCodeError):
    """The type hints of a dependencies dataclass could not be resolved (``type_name``, ``original_error``)."""

    def __init__(
        self, message: str, *, type_name: str | None = None, original_error: BaseException | None = None
    ) -> None:
        super().__init__(message)
        self.type_name = type_name
        self.original_error = original_error


class MissingDepsError(ClaudeCodeError, NotImplementedError):
    """A tool takes a ``RunContext`` but was converted without dependencies to give it."""


# --- the tool runtime -----------------------------------------------------------------------------------------


class DependencyResolutionError(ClaudeCodeError, UserError):
    """A dependency key cannot be resolved: a run-scoped key outside a run with ``Dependencies``, or a cycle.

    Also a pydantic-ai ``UserError``: it is a setup mistake, so tool wrappers let it end the run.
    """


# --- IPC bridge -----------------------------------------------------------------------------------------------


class IPCError(ClaudeCodeError):
    """Base class of the IPC bridge errors."""


class IPCConnectionError(IPCError):
    """The bridge could not reach the IPC server, or the connection broke."""


class IPCMessageSizeError(IPCError):
    """A message exceeds ``MAX_MESSAGE_SIZE``."""


class IPCToolExecutionError(IPCError):
    """A tool function failed while serving an IPC call."""


class BridgeStartupError(IPCError):
    """The bridge process could not start."""
