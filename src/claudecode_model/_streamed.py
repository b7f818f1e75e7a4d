"""``ClaudeCodeStreamedResponse``: the streamed response of one Claude Code turn (re-exported by ``model``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelResponse, ModelResponseStreamEvent, TextPart
from pydantic_ai.models import ModelRequestParameters, StreamedResponse

from claudecode_model._history.details import PROVIDER_NAME
from claudecode_model.exceptions import CLIInterruptedError

if TYPE_CHECKING:
    from claude_agent_sdk import ResultMessage
    from claude_agent_sdk.types import Message

    from claudecode_model._compat import ModelResponsePartsManager
    from claudecode_model._turns.turn import CLITurn

__all__ = [
    "ClaudeCodeResponse",
    "ClaudeCodeStreamedResponse",
    "collected",
    "open_response",
    "raw_messages",
    "response_with_metadata",
]


@dataclass
class ClaudeCodeResponse:
    """A model response together with everything the CLI reported about the turn."""

    response: ModelResponse
    result: ResultMessage | None
    init: dict[str, Any]
    messages: list[Message]


def _now_utc() -> datetime:
    from claudecode_model._compat import now_utc

    return now_utc()


@dataclass
class ClaudeCodeStreamedResponse(StreamedResponse):
    """Streamed response of a Claude Code turn: true token streaming from the CLI's partial messages."""

    _turn: CLITurn
    _timestamp: datetime = field(default_factory=lambda: _now_utc())
    _closed: bool = field(default=False, init=False)

    @property
    def turn(self) -> CLITurn:
        """The CLI turn behind this response."""
        return self._turn

    @property
    def _parts_manager(self) -> ModelResponsePartsManager:  # the parts the turn's translator builds
        return self._turn.translator.parts

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        from claudecode_model._sessions.session import ToolsWaiting

        turn = self._turn
        async with aclosing(turn.messages()) as messages:
            async for message in messages:
                if self._closed:
                    return
                if isinstance(message, ToolsWaiting):  # a reply that was not streamed ended with agent tool calls
                    break
                for event in turn.translator.feed(message):
                    yield event
                    if self._closed:  # nothing after cancel(): the response was recorded as it stood
                        return
                if turn.waiting_calls:  # Claude's reply called tools pydantic-ai runs: this response ends here
                    break
        if turn.wants_structured_output and not turn.waiting_calls:
            # Native output is read from the text after the last tool call: the validated JSON the CLI returned.
            part = TextPart(turn.structured_output_text())
            yield self._parts_manager.handle_part(vendor_part_id="structured_output", part=part)
        summary = turn.conclude(turn.translator.kept(self._parts_manager.get_parts()))
        self._usage = summary.usage
        self.finish_reason = summary.finish_reason
        self.provider_details = summary.provider_details
        self.provider_response_id = summary.provider_response_id

    def get(self) -> ModelResponse:
        """The response so far, without what aborted attempts streamed (see
        :mod:`claudecode_model._stream.attempts`)."""
        response = super().get()
        if not self._turn.translator.attempts.discarded:
            return response
        return replace(response, parts=self._turn.translator.kept(response.parts))

    async def close_stream(self) -> None:
        """Stop the CLI turn (used by ``cancel()``): the session is not reused."""
        # Set here, not read from ``cancelled``: wrappers (pydantic-ai's continuation stream) call this directly.
        self._closed = True
        await self._turn.stop()

    def get_stream_cancel_errors(self) -> tuple[type[BaseException], ...]:
        """The error a turn stopped by :meth:`close_stream` ends with (suppressed after ``cancel()``)."""
        return (CLIInterruptedError,)

    @property
    def model_name(self) -> str:
        """The model the CLI used (from its init message), else the name the model was created with."""
        return self._turn.model_used

    @property
    def provider_name(self) -> str:
        return PROVIDER_NAME

    @property
    def provider_url(self) -> str | None:
        return None

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


@asynccontextmanager
async def open_response(
    turn: AbstractAsyncContextManager[CLITurn], params: ModelRequestParameters
) -> AsyncIterator[ClaudeCodeStreamedResponse]:
    """The streamed response, for the request ``params``, of the CLI turn ``turn`` opens."""
    async with turn as opened:
        yield ClaudeCodeStreamedResponse(model_request_parameters=params, _turn=opened)


async def collected(opened: AbstractAsyncContextManager[StreamedResponse]) -> ClaudeCodeResponse:
    """The whole response of the stream ``opened`` opens, with the CLI's metadata."""
    async with opened as stream:
        async for _ in stream:
            pass
    assert isinstance(stream, ClaudeCodeStreamedResponse)
    return response_with_metadata(stream)


def response_with_metadata(stream: ClaudeCodeStreamedResponse) -> ClaudeCodeResponse:
    """The response a finished stream built, with the CLI's result message, init data and raw messages."""
    outcome = stream.turn.translator.outcome
    return ClaudeCodeResponse(
        response=stream.get(),
        result=outcome.result,
        init=outcome.init_data,
        messages=list(stream.turn.raw_messages),
    )


async def raw_messages(turn: CLITurn) -> AsyncGenerator[Message]:
    """The turn's raw claude-agent-sdk messages (fed to its translator), up to a reply that calls the agent's tools."""
    from claudecode_model._sessions.session import ToolsWaiting

    async with aclosing(turn.messages()) as stream:
        async for message in stream:
            if not isinstance(message, ToolsWaiting):
                for _ in turn.translator.feed(message):
                    pass
                yield message
            if turn.waiting_calls:
                break
