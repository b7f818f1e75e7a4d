"""Planning a request from a pydantic-ai message history: where the history ends in a CLI session, what to send.

A history whose last response came from a Claude Code session carries the point of that session's transcript where
it ends (:class:`SessionPoint`). The request goes on from that point, in the live process, by ``--resume`` or by a
fork of the transcript cut at the point; a history without a point (or whose transcript is gone) is replayed into a
new session. :func:`plan_turn` reads the history and returns a :class:`TurnPlan`; which of these the turn takes is
decided when it starts (:mod:`claudecode_model._history.source`), because it depends on the sessions alive at that
moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, ToolCallPart

from claudecode_model._history.details import HISTORY_DIGEST_KEY, PROVIDER_NAME, RESUME_AT_KEY, SESSION_ID_KEY
from claudecode_model._history.digest import DigestedHistory
from claudecode_model._history.replay import TranscriptEntry, transcript_of
from claudecode_model._history.to_anthropic import ContentBlock, request_blocks
from claudecode_model.exceptions import MessageConversionError

__all__ = ["ResumedCalls", "SessionPoint", "TurnPlan", "plan_turn", "system_prompt_of"]


@dataclass(frozen=True)
class SessionPoint:
    """The point of a CLI session's transcript where a history ends."""

    session_id: str
    message_uuid: str
    """The transcript entry the history's last response ended on (``resume_session_at``)."""
    digest: str
    """Digest of the history up to that point (a live session that has seen exactly it can go on in place)."""


@dataclass(frozen=True)
class ResumedCalls:
    """How a new CLI session takes up the pending calls of the history's last response (calls of the agent's tools
    that pydantic-ai ran, with no turn parked for them): what to replay, and what to send."""

    entries: list[TranscriptEntry]
    """The transcript to replay."""
    deferred_call: ContentBlock | None
    """The ``tool_use`` block the CLI re-runs on resume (its handler answers with pydantic-ai's result)."""
    new_input: list[ContentBlock]
    """The user message of the turn: empty to take up the deferred call, else the new prompt."""
    calls: int
    """How many calls the response made."""


@dataclass(frozen=True)
class TurnPlan:
    """What to send for one request, and where its history ends in a CLI session, if anywhere."""

    system_prompt: str | None
    new_input: list[ContentBlock]
    """Content blocks of the user message that starts this turn in a new session (fresh, or after a replay)."""
    history: Sequence[ModelMessage] = ()
    """The answered part of the conversation (replayed when no session transcript holds it)."""
    point: SessionPoint | None = None
    """Where ``history`` ends in a CLI session whose transcript holds it."""
    continue_input: list[ContentBlock] | None = None
    """The user message when the turn goes on from ``point``: output tool calls the CLI already answered there
    are told to Claude as text, not sent again as tool results."""
    replay_entries: list[TranscriptEntry] | None = None
    """The transcript to replay instead of ``history``'s own (pending calls of the agent's tools taken up in a new
    session, see :class:`ResumedCalls`)."""
    deferred_call: ContentBlock | None = None
    """A ``tool_use`` block of the replayed transcript's last reply that the CLI runs again on resume (pydantic-ai's
    answer to a pending call of the agent's tools): the turn then starts without a user message."""
    branch_point: SessionPoint | None = None
    """Where the reply with ``deferred_call`` lies in its session's transcript: with a session store, when the store
    (or this machine's disk) holds that reply, the transcript is branched there instead of replaying
    ``replay_entries``."""
    digested_history: DigestedHistory | None = None
    """``history`` as digested to find ``point`` (the digest of the conversation after the turn extends it)."""
    _conversation: DigestedHistory = field(
        default_factory=lambda: DigestedHistory(()), init=False, repr=False, compare=False
    )
    """The turn's conversation digested from its start, without a digested ``history``."""

    def conversation_digest(self, messages: Sequence[ModelMessage]) -> str:
        """The history digest of ``messages``, the turn's conversation (``history`` followed by more): each request
        of the turn digests only the messages added since the previous one (see :meth:`DigestedHistory.extended`)."""
        return (self.digested_history or self._conversation).extended(messages)

    def replay(self) -> list[TranscriptEntry]:
        """``history`` as the Anthropic messages to replay into a new session."""
        if self.replay_entries is not None:
            return self.replay_entries
        return transcript_of(self.history)


def plan_turn(
    messages: Sequence[ModelMessage],
    instructions: str | None,
    *,
    allow_continue: bool = True,
    resumed: ResumedCalls | None = None,
) -> TurnPlan:
    """Split ``messages`` into the history already answered and the new input of this turn.

    With ``allow_continue=False`` the plan has no session point: the history is replayed into a new session. With
    ``resumed``, pending calls of the last response are taken up in a new session: its transcript is replayed (or,
    for one deferred call and nothing else to say, the session is branched at that reply where its transcript is
    found whole).
    """
    system_prompt = system_prompt_of(messages, instructions)
    last_response = _last_response_index(messages)
    new_requests = [m for m in messages[last_response + 1 :] if isinstance(m, ModelRequest)]
    if last_response < 0:
        return TurnPlan(system_prompt=system_prompt, new_input=_new_input(new_requests))
    history = messages[: last_response + 1]
    response = messages[last_response]
    assert isinstance(response, ModelResponse)
    new_input = _new_input(new_requests)
    found = _session_point(response, history) if allow_continue else None
    if resumed is not None:
        point = found[0] if found is not None else None
        return TurnPlan(
            system_prompt=system_prompt,
            new_input=resumed.new_input,
            history=history,
            replay_entries=resumed.entries,
            deferred_call=resumed.deferred_call,
            branch_point=point if resumed.deferred_call is not None and resumed.calls == 1 else None,
            digested_history=found[1] if found is not None else None,
        )
    if found is None:
        return TurnPlan(system_prompt=system_prompt, new_input=new_input, history=history)
    point, digested = found
    # The CLI already answered the output tool calls it stopped at (plain ToolCallParts): what pydantic-ai says
    # about them (a validation retry, "Final result processed.") goes to Claude as text.
    answered = {part.tool_call_id for part in response.parts if type(part) is ToolCallPart}
    return TurnPlan(
        system_prompt=system_prompt,
        new_input=new_input,
        history=history,
        point=point,
        continue_input=_new_input(new_requests, answered_calls=answered),
        digested_history=digested,
    )


def _session_point(
    response: ModelResponse, history: Sequence[ModelMessage]
) -> tuple[SessionPoint, DigestedHistory] | None:
    """Where ``history`` (ending with ``response``) ends in the session that produced ``response``, if it is
    unchanged since (its digest matches) and the response recorded the transcript entry it ended on; and the
    history digested."""
    if response.provider_name != PROVIDER_NAME:
        return None
    details = response.provider_details or {}
    session_id = details.get(SESSION_ID_KEY)
    message_uuid = details.get(RESUME_AT_KEY)
    recorded_digest = details.get(HISTORY_DIGEST_KEY)
    if not (isinstance(session_id, str) and isinstance(message_uuid, str) and isinstance(recorded_digest, str)):
        return None
    digested = DigestedHistory(history)
    if recorded_digest != digested.digest:
        return None
    return SessionPoint(session_id=session_id, message_uuid=message_uuid, digest=recorded_digest), digested


def _new_input(
    requests: list[ModelRequest], *, answered_calls: frozenset[str] | set[str] = frozenset()
) -> list[ContentBlock]:
    new_input = [block for request in requests for block in request_blocks(request, answered_calls=answered_calls)]
    if not new_input:
        raise MessageConversionError("The message history ends without a new user prompt or tool result to send.")
    return new_input


def _last_response_index(messages: Sequence[ModelMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], ModelResponse):
            return index
    return -1


def system_prompt_of(messages: Sequence[ModelMessage], instructions: str | None) -> str | None:
    """The system prompt of a request: every system prompt part of ``messages``, then the instructions."""
    texts = [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, SystemPromptPart) and part.content
    ]
    if instructions:
        texts.append(instructions)
    return "\n\n".join(texts) if texts else None
