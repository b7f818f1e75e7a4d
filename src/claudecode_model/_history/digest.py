"""Stable digests: of JSON-like values, and of what a pydantic-ai conversation contains."""

from __future__ import annotations

import hashlib
import json
import operator
import weakref
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
    VideoUrl,
)

__all__ = ["DigestedHistory", "canonical_digest", "history_digest", "message_digest"]


def canonical_digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys, non-JSON values as their ``str``).

    Text that is not valid Unicode (lone surrogates, as ``os.fsdecode`` gives for undecodable bytes) is digested
    as its surrogate code points; valid text gives the same digest as plain UTF-8.
    """
    encoded = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def history_digest(messages: Sequence[ModelMessage]) -> str:
    """A stable digest of what a conversation contains (parts only: no timestamps, ids of responses, details).

    The digest of the history is that of its messages' digests, and each message's digest is computed once per
    message object (while its parts are the same objects): a turn digests the history it continues and then the
    history with its response, and a conversation passes the same message objects turn after turn, so the cost
    per turn is that of the new messages, not of the whole conversation.
    """
    return DigestedHistory(messages).digest


class DigestedHistory:
    """A history digested once: the digest of the same messages followed by more costs only the added ones.

    It also keeps the last conversation :meth:`extended` digested: the requests of one CLI turn (one per tool call
    pydantic-ai runs) each pass the conversation so far, the same message objects plus a few, so each costs the
    digests of the messages added since the previous request, not of all the turn's messages again.
    """

    def __init__(self, messages: Sequence[ModelMessage]) -> None:
        self._base = len(messages)
        self._messages = list(messages)
        """The history, then the messages the last :meth:`extended` added to it."""
        history_hash = hashlib.sha256("".join(map(message_digest, self._messages)).encode())
        self._states = [history_hash]
        """The hash after the history, then after each message added (never updated in place)."""
        self.digest = history_hash.hexdigest()
        """The :func:`history_digest` of the messages."""

    def extended(self, messages: Sequence[ModelMessage]) -> str:
        """The :func:`history_digest` of ``messages``; when they begin with this history's message objects, the
        digests of those are taken as they were computed here (what a CLI session was sent), not checked again, and
        so are those of the messages after them that the last call was given as the same objects."""
        base, known = self._base, self._messages
        if len(messages) < base or not all(map(operator.is_, known[:base], messages[:base])):
            return history_digest(messages)
        same, limit = base, min(len(known), len(messages))
        while same < limit and known[same] is messages[same]:
            same += 1
        del known[same:]
        del self._states[same - base + 1 :]
        state = self._states[-1]
        for message in messages[same:]:
            state = state.copy()
            state.update(message_digest(message).encode())
            known.append(message)
            self._states.append(state)
        return state.hexdigest()


_MessageKey = tuple[int, ...]
_DIGESTS: dict[int, tuple[weakref.ref[ModelMessage], _MessageKey, str]] = {}
"""``id(message)`` -> (the message, the ids of its parts when digested, its digest)."""

_RECENT: dict[_MessageKey, tuple[tuple[Any, ...], str]] = {}
"""(is a request, the ids of its parts) -> (those parts and their fields, kept alive so that the ids stay theirs; the
digest), for the last few messages digested: a response is digested once when its turn ends and again, as another
``ModelResponse`` object with the same parts, when the next turn continues the conversation."""
_RECENT_SIZE = 16


def message_digest(message: ModelMessage) -> str:
    """The digest of one message's content, cached while the message, its parts and their fields are the same
    objects."""
    key = id(message)
    # Every part, and its content or arguments, by identity: a part or its content replaced is seen (strings are
    # immutable, so a changed text is a new object); arguments changed in place (a dict) are not: a history edited
    # so must use new parts.
    # (Three flat passes: this check runs for every message of the history twice per turn.)
    message_parts = message.parts
    parts = (
        *map(id, message_parts),
        *[id(getattr(part, "content", None)) for part in message_parts],
        *[id(getattr(part, "args", None)) for part in message_parts],
    )
    cached = _DIGESTS.get(key)
    if cached is not None and cached[0]() is message and cached[1] == parts:
        return cached[2]
    content_key: _MessageKey = (isinstance(message, ModelRequest), *parts)
    recent = _RECENT.get(content_key)
    if recent is not None:
        digest = recent[1]
    else:
        digest = canonical_digest(_canonical_message(message))
        kept = (
            *message_parts,
            *[(getattr(part, "content", None), getattr(part, "args", None)) for part in message_parts],
        )
        _RECENT[content_key] = (kept, digest)
        if len(_RECENT) > _RECENT_SIZE:
            del _RECENT[next(iter(_RECENT))]
    try:
        ref = weakref.ref(message, lambda dead, key=key: _forget(key, dead))  # type: ignore[misc]
    except TypeError:  # not weak-referenceable: not cached
        return digest
    _DIGESTS[key] = (ref, parts, digest)
    return digest


def _forget(key: int, dead: weakref.ref[ModelMessage]) -> None:
    cached = _DIGESTS.get(key)
    if cached is not None and cached[0] is dead:
        del _DIGESTS[key]


def _canonical_message(message: ModelMessage) -> list[Any]:
    if isinstance(message, ModelRequest):
        return ["request", [_canonical_request_part(part) for part in message.parts]]
    return ["response", [_canonical_response_part(part) for part in message.parts]]


def _canonical_request_part(part: ModelRequestPart) -> list[Any]:
    match part:
        case SystemPromptPart():
            return ["system", part.content]
        case UserPromptPart():
            return ["user", _canonical_user_content(part.content)]
        case ToolReturnPart():
            return ["tool-return", part.tool_call_id, part.model_response_str()]
        case RetryFeedbackPart():
            return ["retry", part.model_response()]
        case _:
            return [getattr(part, "part_kind", type(part).__name__)]


def _canonical_user_content(content: str | Sequence[UserContent]) -> Any:
    if isinstance(content, str):
        return content
    items: list[Any] = []
    for item in content:
        match item:
            case str():
                items.append(item)
            case TextContent():
                items.append(item.content)
            case BinaryContent():
                items.append([item.media_type, hashlib.sha256(item.data).hexdigest()])
            case ImageUrl() | DocumentUrl() | AudioUrl() | VideoUrl():
                items.append([item.kind, item.url])
            case _:
                items.append(type(item).__name__)
    return items


def _canonical_response_part(part: ModelResponsePart) -> list[Any]:
    match part:
        case TextPart():
            return ["text", part.content]
        case ThinkingPart():
            return ["thinking", part.content]
        case ToolCallPart() | NativeToolCallPart():
            return ["call", part.tool_call_id, part.tool_name, part.args_as_json_str()]
        case NativeToolReturnPart():
            return ["return", part.tool_call_id, part.model_response_str()]
        case _:
            return [getattr(part, "part_kind", type(part).__name__)]
