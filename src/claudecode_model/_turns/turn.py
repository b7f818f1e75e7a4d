"""One CLI turn in flight (:class:`CLITurn`): its SDK messages under the request's timeout, then usage, cost and
details, then the end (the session kept for follow-ups, or stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from claude_agent_sdk.types import AssistantMessage, Message, MirrorErrorMessage, StreamEvent
from pydantic_ai.messages import FinishReason, ModelMessage, ModelResponse, ModelResponsePart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.usage import RequestUsage

from claudecode_model._compat import ModelResponsePartsManager
from claudecode_model._history.details import (
    ABORTED_ATTEMPTS_KEY,
    FIRST_TOKEN_KEY,
    HISTORY_DIGEST_KEY,
    RESUME_AT_KEY,
    SESSION_STORE_KEY,
)
from claudecode_model._history.plan import TurnPlan
from claudecode_model._history.to_anthropic import ContentBlock, user_content_blocks
from claudecode_model._history.transcripts import TranscriptFiles
from claudecode_model._sessions.session import CLISession, ToolsWaiting
from claudecode_model._stream.errors import result_error
from claudecode_model._stream.failures import classify_failed_turn
from claudecode_model._stream.pricing import list_price
from claudecode_model._stream.telemetry import SESSION_SOURCE_KEY, SessionSource, record_turn
from claudecode_model._stream.translator import TurnTranslator, delivery_unless_streaming
from claudecode_model._tools.router import RunToolRouter
from claudecode_model._turns.acquire import start_spare
from claudecode_model._turns.error_map import ErrorMap, RunningTurn, mapping_errors
from claudecode_model._turns.runner import SessionRequest, TurnRunner, nothing
from claudecode_model._turns.spent import note_spent
from claudecode_model._turns.watchdog import InactivityWatchdog
from claudecode_model.exceptions import ClaudeCodeError, StructuredOutputError

__all__ = ["CLITurn", "SessionLease", "TurnClock", "TurnEnd", "TurnSummary"]

logger = logging.getLogger(__name__)

_E = TypeVar("_E", bound=BaseException)


@dataclass(frozen=True)
class TurnSummary:
    """What a concluded turn reports on its response."""

    usage: RequestUsage
    finish_reason: FinishReason | None
    provider_details: dict[str, Any]
    provider_response_id: str | None


@dataclass(eq=False)
class SessionLease:
    """The CLI session a turn holds, how it got it, and what it gives back at the end."""

    session: CLISession
    router: RunToolRouter
    files: TranscriptFiles
    source: SessionSource = "fresh"
    """How the turn reached its session: ``live``, ``resume``, ``fork``, ``replay``, ``fresh`` or ``spare``."""
    keep: bool = True
    """Whether the session may serve follow-ups (``claude_code_session="auto"``)."""
    release_source: Callable[[], None] = nothing
    """Ends the turn's use of the transcript it started from (a branch's source)."""
    store_fault: str | None = None
    """Why the session store's copy of the session lacks part of this turn's conversation, if it does."""
    spare_request: SessionRequest | None = None
    """What to start a spare from once the turn is over (turns of new conversations only)."""


@dataclass(eq=False)
class TurnClock:
    """A turn's time, on one clock (``time.perf_counter()``); its deadline is in the event loop's time."""

    timeout: float | None
    deadline: float | None = None
    """When the request's time is up (loop time), counted from its start; ``None``: no timeout."""
    inactivity_timeout: float | None = None
    """Seconds the CLI may send nothing while no tool runs (``None``: no bound); see :mod:`.watchdog`."""
    started: float = field(default_factory=time.perf_counter)
    """When the request started."""
    first_token_seconds: float | None = None
    """Seconds from the request to the first token of Claude's answer (a streamed delta or a message)."""

    def restart(self) -> None:
        """The next request of the turn starts now: its time counts again."""
        self.started, self.first_token_seconds = time.perf_counter(), None
        if self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    def start_deadline(self) -> None:
        """A turn started without a deadline gets one from now."""
        if self.deadline is None and self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    def note_token(self, arrived: float) -> None:
        """A token of Claude's answer arrived at ``arrived`` (the first one counts)."""
        if self.first_token_seconds is None:
            self.first_token_seconds = max(arrived - self.started, 0.0)

    def elapsed(self) -> float:
        """Seconds since the request started."""
        return time.perf_counter() - self.started


@dataclass
class TurnEnd:
    """How the turn has ended, so far."""

    completed: bool = False
    failed: bool = False
    timed_out: bool = False
    """The request's time ran out (its CLI is killed at once)."""
    exact: bool = True
    """Whether the session's conversation is exactly the history and this turn's response."""


@dataclass(eq=False, repr=False, kw_only=True)
class CLITurn:
    """One CLI turn in flight: its session lease, its clock, the translator of its SDK messages, and how it ended."""

    runner: TurnRunner
    lease: SessionLease
    clock: TurnClock
    plan: TurnPlan
    messages_in: list[ModelMessage]
    params: ModelRequestParameters
    stderr: deque[str]
    translator: TurnTranslator
    new_input: list[ContentBlock]
    wants_structured_output: bool = False
    calls_wait_for_pydantic_ai: bool = False
    """pydantic-ai runs the agent's tools: a reply calling them ends a response and the turn waits."""
    system_prompt: str | None = None
    """The system prompt the CLI process was started with (a later request of the turn must ask for the same)."""
    content_events: bool = True
    """Whether the request being answered streams: without, the session drops the stream events of text and
    thinking as they arrive (the assistant messages carry the same content)."""
    end: TurnEnd = field(default_factory=TurnEnd, init=False)
    raw_messages: list[Message] = field(default_factory=list, init=False)
    _source: AsyncGenerator[Message | ToolsWaiting, None] | None = field(default=None, init=False)
    _watchdog: InactivityWatchdog | None = field(default=None, init=False)

    @property
    def session(self) -> CLISession:
        """The CLI session the turn runs in."""
        return self.lease.session

    @property
    def router(self) -> RunToolRouter:
        """The session's tool router."""
        return self.lease.router

    @property
    def completed(self) -> bool:
        """Whether the turn ran to a clean end."""
        return self.end.completed

    @property
    def failed(self) -> bool:
        """Whether the turn failed (or was stopped)."""
        return self.end.failed

    @property
    def waiting_calls(self) -> list[str]:
        """The ids of the calls the turn waits for (its last reply called tools pydantic-ai runs), else empty."""
        return self.translator.parked_calls if self.calls_wait_for_pydantic_ai and not self.failed else []

    def set_streaming(self, streaming: bool) -> None:
        """Whether the request being answered streams (see :attr:`content_events`)."""
        self.content_events = streaming

    def park(self, on_cli_death: Callable[[BaseException], None]) -> None:
        """The turn waits for tool results pydantic-ai runs; ``on_cli_death`` is told if its CLI dies meanwhile."""
        self.session.wait_for_tools(on_cli_death)

    def continue_with(
        self, messages: list[ModelMessage], parts: ModelResponsePartsManager, *, another_run: bool = False
    ) -> None:
        """Go on with the next response of this turn, for the request ``messages`` (its answers were delivered); the
        timeout counts again from now. ``another_run``: a run other than the one that parked the turn goes on with
        it (after approvals, an output tool call), using the CLI process it kept alive."""
        self.session.tools_answered()
        if another_run:
            self.lease.source = "live"
        self.messages_in = messages
        self.translator.next_response(parts)
        self.clock.restart()

    async def say(self, prompts: Sequence[UserPromptPart]) -> None:
        """Send user prompts to the waiting turn (Claude gets them with the answers to its calls)."""
        content = [block for part in prompts for block in user_content_blocks(part.content)]
        message = {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}
        await self.session.say_during_turn(message)

    async def close_parked(self) -> None:
        """Stop a turn that waits for results: the CLI is stopped first (so that it sends Claude nothing more), then
        any handler still waiting gets a "not executed" error."""
        self.end.failed = True
        self._stop_watching()
        self.lease.release_source()
        try:
            await self.session.abort(at_once=True)
        finally:
            self.router.results.close()

    def kill(self) -> None:
        """Synchronous last resort (interpreter exit, or the event loop is gone)."""
        self.session.kill()

    def stop_now(self) -> None:
        """Kill the CLI of a turn parked on a loop that does not run, from any thread (SIGKILL: a call that fails
        would make the CLI send Claude one more request); :meth:`close_parked` on the loop tidies up later."""
        self.session.terminate(force=True)

    @property
    def model_used(self) -> str:
        """The model that wrote the last reply, else the one the CLI was started with (its init message), else the
        name the model was created with."""
        used = self.translator.outcome.reply_model or self.translator.outcome.init_data.get("model")
        return used if isinstance(used, str) and used else self.runner.display_name

    def _user_message(self) -> dict[str, Any] | None:
        if self.plan.deferred_call is not None:
            return None  # the resumed session takes up the call its transcript deferred by itself
        message: dict[str, Any] = {
            "type": "user",
            "message": {"role": "user", "content": self.new_input},
            "parent_tool_use_id": None,
        }
        if self.lease.source in _OPENS_CONVERSATION:
            # The CLI names the message's transcript entry with this uuid: a rewind to it empties the conversation
            # (a later new conversation of the same kind is served by this process, see CLISession.rewind).
            message["uuid"] = self.session.opening_uuid = str(uuid.uuid4())
        return message

    async def messages(self) -> AsyncGenerator[Message | ToolsWaiting, None]:
        """The SDK messages of this turn, with the timeout and error mapping applied.

        Leaving the iteration early does not end the turn: iterating again goes on with the next message. The
        timeout counts from the start of the request (the CLI's start included).
        """
        self.session.deliver_with(None if self.content_events else delivery_unless_streaming)
        if self._source is None:
            self._source = self.session.run_turn(self._user_message())
            if self.clock.inactivity_timeout is not None:
                self._watchdog = InactivityWatchdog(
                    self.session, self.clock.inactivity_timeout, self.runner.display_name
                )
                self._watchdog.start()
            self.clock.start_deadline()
        with mapping_errors(self._errors()):
            async with asyncio.timeout_at(self.clock.deadline):
                async for message in self._source:
                    if isinstance(message, ToolsWaiting):
                        if self.calls_wait_for_pydantic_ai and self.translator.tools_waiting(message.ids):
                            yield message  # the response ends here: its consumer sees waiting_calls
                        continue
                    if isinstance(message, MirrorErrorMessage):
                        self._mirror_failed(message)
                        continue
                    self.raw_messages.append(message)
                    if _is_token(message):
                        self.clock.note_token(self.session.arrived)
                    yield message
        self._end()

    def _errors(self) -> ErrorMap:
        """How the errors of the running turn are mapped (the turn fails; what it spent is noted on the error)."""

        def failed(timed_out: bool) -> None:
            self.end.failed = True
            self.end.timed_out = self.end.timed_out or timed_out

        turn = RunningTurn(
            self.translator.outcome,
            self.raw_messages,
            lambda: self.router.fatal_error,
            failed,
            self._spent,
            lambda: self.model_used,
        )
        return ErrorMap(self.runner.display_name, self.stderr, self.clock.timeout, turn=turn)

    def _spent(self, error: _E) -> _E:
        """``error`` with what the turn spent so far (see :class:`~claudecode_model.exceptions.ClaudeCodeError`)."""
        self._stop_watching()
        if isinstance(error, ClaudeCodeError):
            note_spent(error, self.translator, self.session.reported_cost_usd, self.model_used)
        return error

    def _stop_watching(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.stop()

    def _mirror_failed(self, message: MirrorErrorMessage) -> None:
        """The SDK could not write part of the session's transcript into the store (it dropped those entries; the
        store guard keeps them and sends them again with the session's next write)."""
        session_id = message.key["session_id"] if message.key is not None else self.session.session_id
        self.lease.store_fault = f"a session store write failed: {message.error}"
        logger.warning(
            "session store: transcript entries of session %s could not be written (%s); until a later turn of the "
            "session on this worker writes them, other workers replay the conversation instead of resuming it",
            session_id,
            message.error,
        )

    def _end(self) -> None:
        """Judge a turn whose messages all arrived."""
        if self.router.fatal_error is not None:
            self.end.failed = True
            raise self.router.fatal_error
        if self.router.output_call is not None:
            # Stopped on purpose at the output tool call: pydantic-ai validates it; the session stays usable.
            self.end.completed = True
            return
        self._stop_watching()
        error = classify_failed_turn(self.raw_messages, self.model_used) or result_error(
            self.translator.outcome, model_name=self.model_used
        )
        if error is not None:
            self.end.failed = True
            raise self._spent(error)
        self.end.completed = True

    def structured_output_text(self) -> str:
        """The validated JSON the CLI returned for a native output schema."""
        result = self.translator.outcome.result
        structured = result.structured_output if result is not None else None
        if structured is None:
            raise StructuredOutputError(
                "Claude Code finished without producing the structured output the request asked for"
            )
        return json.dumps(structured, ensure_ascii=False)

    def conclude(self, parts: list[ModelResponsePart]) -> TurnSummary:
        """Usage, cost, finish reason and details of the finished turn; the session remembers what it has seen."""
        translator = self.translator
        result = translator.outcome.result
        usage = translator.usage(
            self.session.reported_cost_usd, lambda response_usage: list_price(response_usage, self.model_used)
        )
        if result is not None and result.total_cost_usd is not None:
            self.session.note_cost(result.total_cost_usd)
        details = translator.provider_details()
        if self.clock.first_token_seconds is not None:
            details[FIRST_TOKEN_KEY] = round(self.clock.first_token_seconds, 4)
        attempts = translator.attempts
        if attempts.aborted:
            details[ABORTED_ATTEMPTS_KEY] = attempts.aborted
        session_id = translator.outcome.session_id
        if session_id is not None:
            digest = self.plan.conversation_digest([*self.messages_in, ModelResponse(parts=parts)])
            details[HISTORY_DIGEST_KEY] = digest
            # A session that kept part of an aborted attempt in its conversation holds more than the history.
            self.end.exact = self.lease.keep and not attempts.tainted
            self.session.note_seen(digest if self.end.exact else None)
            if self.end.exact and translator.outcome.last_entry_uuid is not None:
                details[RESUME_AT_KEY] = translator.outcome.last_entry_uuid
                self.session.conversation_points.add(translator.outcome.last_entry_uuid)
            self._note_session(session_id)
        details[SESSION_SOURCE_KEY] = self.lease.source
        if self.lease.store_fault is not None:
            details[SESSION_STORE_KEY] = "incomplete"
        record_turn(details, parts)
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "Claude Code turn done in %.2f s: %d input and %d output tokens, cost %s, session %s",
                self.clock.elapsed(),
                usage.input_tokens,
                usage.output_tokens,
                f"${usage.cost:.6f}" if usage.cost is not None else "unknown",
                session_id,
            )
        return TurnSummary(
            usage=usage,
            finish_reason="tool_call" if self.router.output_call is not None else translator.finish_reason(),
            provider_details=details,
            provider_response_id=result.uuid if result is not None else None,
        )

    def _note_session(self, session_id: str) -> None:
        """Count the session's use of its id now that it is known (a fresh session), and own what it writes when
        it serves no follow-up."""
        ledger = self.runner.ledger
        if not ledger.in_use(session_id):
            self.session.when_closed(ledger.use(session_id))
            if not self.lease.keep:
                ledger.own(session_id, self.lease.files.path(session_id))

    async def stop(self) -> None:
        """Stop the turn now (the stream was cancelled): the session is not reused."""
        self.end.failed = True
        await self.session.abort()

    async def finish(self) -> None:
        """Keep the session for the next turn if it ended cleanly, otherwise stop the CLI."""
        self._stop_watching()
        source, self._source = self._source, None
        if source is not None:
            with contextlib.suppress(RuntimeError):  # still running in a task that was cancelled
                await source.aclose()
        self.lease.release_source()
        if not self.completed or self.failed:
            # Out of time: the CLI is killed at once, so that the error is not kept waiting for its exit.
            await self.session.abort(at_once=self.end.timed_out)
        elif not self.end.exact:
            await self.session.close()
        else:
            await self.runner.pool.put(self.session)
        slots = self.runner.slots
        if slots is not None and slots.waiting:
            self.runner.pool.evict_idle()  # a request waits for a process slot: it gets this one
        spare_request, self.lease.spare_request = self.lease.spare_request, None
        if spare_request is not None and self.completed and not self.failed:
            # Started once the turn is over, so that it does not compete with the turn for CPU.
            start_spare(spare_request)
            # In a run_sync program, the call returns once the spare's CLI exists: it boots between the calls.
            await self.runner.pool.head_start()


_OPENS_CONVERSATION: frozenset[SessionSource] = frozenset({"fresh", "spare", "rewound"})
"""The sessions whose turn opens their CLI's conversation (a process that holds no conversation yet)."""


def _is_token(message: Message) -> bool:
    """Whether ``message`` carries the first of Claude's answer: a content delta, or a whole message."""
    if isinstance(message, StreamEvent):
        return message.event.get("type") == "content_block_delta"
    return isinstance(message, AssistantMessage)
