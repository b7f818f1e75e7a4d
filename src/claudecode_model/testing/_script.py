"""Scripted turns and injectable failures of the offline backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.messages import FinishReason, ModelResponse, ModelResponsePart, TextPart, ToolCallPart

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pydantic_ai.usage import RequestUsage

__all__ = ["ERROR_TYPE_BY_STATUS", "Failure", "FailureKind", "ScriptedTurn", "error_type_for_status"]

ERROR_TYPE_BY_STATUS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""Anthropic's error ``type`` for each HTTP status it documents."""


def error_type_for_status(status: int) -> str:
    """Anthropic's error type for a status (``api_error`` for other 5xx, else ``invalid_request_error``)."""
    if status in ERROR_TYPE_BY_STATUS:
        return ERROR_TYPE_BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


FailureKind = Literal["http", "sse_error", "malformed_sse", "stall", "cut"]
CutEnding = Literal["drop", "sse_error"]


@dataclass(frozen=True)
class Failure:
    """A failure the backend serves instead of the brain's answer (see ``OfflineBackend.fail_next``).

    Build one with :meth:`http`, :meth:`sse_error`, :meth:`malformed_sse`, :meth:`stall` or :meth:`cut`.
    """

    kind: FailureKind
    status: int = 200
    error_type: str = "api_error"
    message: str = ""
    seconds: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    """For :meth:`http`: extra response headers."""
    details: Mapping[str, Any] | None = None
    """The error's ``details`` object (such as ``{"error_code": "credits_required"}``), if it has one."""
    partial: ModelResponse | None = None
    """For :meth:`cut`: the answer whose stream is cut."""
    after_deltas: int = 0
    """For :meth:`cut`: how many content deltas of ``partial`` are sent before the cut."""
    ending: CutEnding = "drop"
    """For :meth:`cut`: how the stream ends: the connection dropped, or an SSE ``error`` event."""

    @classmethod
    def http(
        cls,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Failure:
        """An HTTP error status with Anthropic's error JSON body (type from the status unless given, and
        ``details`` in the error object if given).

        ``headers`` are added to the response, e.g. the ``anthropic-ratelimit-unified-*`` headers of a
        subscription's usage limit, or ``retry-after``.
        """
        if not 400 <= status <= 599:
            raise ValueError(f"an HTTP failure needs a 4xx or 5xx status, not {status}")
        kind = error_type or error_type_for_status(status)
        return cls(
            "http",
            status=status,
            error_type=kind,
            message=message or f"offline backend: injected {status}",
            headers=tuple((headers or {}).items()),
            details=dict(details) if details is not None else None,
        )

    @classmethod
    def sse_error(
        cls,
        error_type: str = "overloaded_error",
        message: str = "Overloaded",
        *,
        details: Mapping[str, Any] | None = None,
    ) -> Failure:
        """A 200 stream that sends ``message_start`` and then an SSE ``error`` event (with ``details``, if given)."""
        return cls("sse_error", error_type=error_type, message=message, details=dict(details) if details else None)

    @classmethod
    def malformed_sse(cls) -> Failure:
        """A 200 event stream whose data is not valid JSON."""
        return cls("malformed_sse")

    @classmethod
    def stall(cls, seconds: float | None = None) -> Failure:
        """Accept the request, send nothing for ``seconds`` (until the backend stops if None), then a 529."""
        if seconds is not None and seconds < 0:
            raise ValueError("seconds must not be negative")
        return cls(
            "stall",
            status=529,
            error_type="overloaded_error",
            message="offline backend: stalled",
            seconds=seconds,
        )

    @classmethod
    def cut(
        cls,
        answer: ScriptedTurn | ModelResponse | str,
        *,
        after_deltas: int,
        ending: CutEnding = "drop",
        error_type: str = "overloaded_error",
        message: str = "Overloaded",
    ) -> Failure:
        """A stream of ``answer`` that ends after ``after_deltas`` content deltas: the connection drops
        (``ending="drop"``) or an SSE ``error`` event follows (``ending="sse_error"``).

        The Claude Code CLI recovers from both by retrying the request without streaming; a plain request
        hit by this failure gets the ``ending`` as an error status instead. What the client saw of ``answer``
        belongs to an aborted attempt.
        """
        if after_deltas < 0:
            raise ValueError("after_deltas must not be negative")
        match answer:
            case str():
                partial = ModelResponse(parts=[TextPart(answer)])
            case ScriptedTurn():
                partial = answer.to_response()
            case ModelResponse():
                partial = answer
        return cls(
            "cut",
            status=529 if error_type == "overloaded_error" else 500,
            error_type=error_type,
            message=message,
            partial=partial,
            after_deltas=after_deltas,
            ending=ending,
        )

    def error_body(self) -> dict[str, Any]:
        """Anthropic's error JSON for this failure."""
        error: dict[str, Any] = {"type": self.error_type, "message": self.message}
        if self.details is not None:
            error["details"] = dict(self.details)
        return {"type": "error", "error": error}


@dataclass(frozen=True)
class ScriptedTurn:
    """One scripted reply: response parts (a ``str`` item is a text part), with optional extras.

    ``delay`` seconds are waited before the reply starts; ``usage`` overrides the estimated token counts.
    """

    parts: Sequence[ModelResponsePart | str] = ()
    finish_reason: FinishReason | None = None
    usage: RequestUsage | None = None
    delay: float = 0.0

    @classmethod
    def text(cls, text: str, *, delay: float = 0.0) -> ScriptedTurn:
        """A plain text reply."""
        return cls(parts=(TextPart(text),), delay=delay)

    @classmethod
    def tool_call(
        cls,
        tool_name: str,
        args: Mapping[str, Any] | None = None,
        *,
        tool_call_id: str | None = None,
        text: str | None = None,
        delay: float = 0.0,
    ) -> ScriptedTurn:
        """A reply that calls one tool, optionally after a text preamble."""
        call = (
            ToolCallPart(tool_name, dict(args or {}), tool_call_id=tool_call_id)
            if tool_call_id
            else ToolCallPart(tool_name, dict(args or {}))
        )
        parts: tuple[ModelResponsePart | str, ...] = (text, call) if text else (call,)
        return cls(parts=parts, delay=delay)

    def to_response(self) -> ModelResponse:
        """This turn as a pydantic-ai response."""
        parts = [TextPart(p) if isinstance(p, str) else p for p in self.parts]
        response = ModelResponse(parts=parts, finish_reason=self.finish_reason)
        if self.usage is not None:
            response.usage = self.usage
        return response
