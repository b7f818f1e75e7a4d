"""Planning a request from a pydantic-ai message history: continue a CLI session, or replay into a new one.

A request either continues a CLI session that has already seen the history (a live process, or ``--resume``), or
replays the history into a new session. :func:`plan_turn` decides which and returns a :class:`TurnPlan`; the turn
runner carries it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, ToolCallPart

from claudecode_model._details import HISTORY_DIGEST_KEY, PROVIDER_NAME, SESSION_ID_KEY
from claudecode_model._digest import history_digest
from claudecode_model._replay import TranscriptEntry, transcript_of
from claudecode_model._to_anthropic import ContentBlock, request_blocks
from claudecode_model.exceptions import MessageConversionError


@dataclass(frozen=True)
class TurnPlan:
    """What to send for one request, and which session it belongs to."""

    system_prompt: str | None
    new_input: list[ContentBlock]
    """Content blocks of the user message that starts this turn."""
    continue_session_id: str | None = None
    """A session whose transcript already holds ``history`` (continue it live or by resume)."""
    history_digest: str | None = None
    """Digest of the history the continued session has seen."""
    replay: list[TranscriptEntry] = field(default_factory=list)
    """History to replay into a fresh session when no session can be continued."""


def plan_turn(messages: Sequence[ModelMessage], instructions: str | None, *, allow_continue: bool = True) -> TurnPlan:
    """Split ``messages`` into the history already answered and the new input of this turn."""
    system_prompt = _system_prompt(messages, instructions)
    last_response = _last_response_index(messages)
    new_requests = [m for m in messages[last_response + 1 :] if isinstance(m, ModelRequest)]
    if last_response < 0:
        return TurnPlan(system_prompt=system_prompt, new_input=_new_input(new_requests))
    history = messages[: last_response + 1]
    response = messages[last_response]
    assert isinstance(response, ModelResponse)
    details = response.provider_details or {}
    session_id = details.get(SESSION_ID_KEY)
    recorded_digest = details.get(HISTORY_DIGEST_KEY)
    if (
        allow_continue
        and response.provider_name == PROVIDER_NAME
        and isinstance(session_id, str)
        and recorded_digest == history_digest(history)
    ):
        # The CLI already answered the output tool calls it stopped at (plain ToolCallParts): what pydantic-ai
        # says about them (a validation retry, "Final result processed.") goes to Claude as text.
        answered = {part.tool_call_id for part in response.parts if type(part) is ToolCallPart}
        new_input = _new_input(new_requests, answered_calls=answered)
        return TurnPlan(
            system_prompt=system_prompt,
            new_input=new_input,
            continue_session_id=session_id,
            history_digest=recorded_digest,
        )
    return TurnPlan(system_prompt=system_prompt, new_input=_new_input(new_requests), replay=transcript_of(history))


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


def _system_prompt(messages: Sequence[ModelMessage], instructions: str | None) -> str | None:
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
