"""Planning a turn from a pydantic-ai message history.

A request either continues a CLI session that has already seen the history (live process or ``--resume``), or
replays the history into a new session. This module decides which, and converts pydantic-ai parts into the
Anthropic content blocks Claude Code receives.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    DocumentUrl,
    FilePart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserContent,
    UserPromptPart,
    VideoUrl,
)

from claudecode_model.exceptions import MessageConversionError, UnsupportedContentError

PROVIDER_NAME = "claude-code"
SESSION_ID_KEY = "session_id"
HISTORY_DIGEST_KEY = "history_digest"
CLI_TOOL_NAME_KEY = "cli_tool_name"
PARENT_TOOL_CALL_ID_KEY = "parent_tool_call_id"
"""``provider_details`` key of a part produced inside a subagent: the id of the ``Agent`` call that started it."""

ContentBlock = dict[str, Any]

_IMAGE_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


@dataclass(frozen=True)
class TranscriptEntry:
    """One message of a conversation as the Anthropic API sees it."""

    role: Literal["user", "assistant"]
    content: list[ContentBlock]


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


def _new_input(requests: list[ModelRequest], *, answered_calls: frozenset[str] | set[str] = frozenset()) -> list[Any]:
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


# --- digests ---------------------------------------------------------------------------------------------------


def history_digest(messages: Sequence[ModelMessage]) -> str:
    """A stable digest of what a conversation contains (parts only: no timestamps, ids of responses, details)."""
    canonical = [_canonical_message(message) for message in messages]
    encoded = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hashlib.sha256(encoded).hexdigest()


def _canonical_message(message: ModelMessage) -> list[Any]:
    if isinstance(message, ModelRequest):
        return ["request", [_canonical_request_part(part) for part in message.parts]]
    return ["response", [_canonical_response_part(part) for part in message.parts]]


def _canonical_request_part(part: Any) -> list[Any]:
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


def _canonical_response_part(part: Any) -> list[Any]:
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


# --- pydantic-ai parts -> Anthropic content blocks -------------------------------------------------------------


def request_blocks(
    request: ModelRequest, *, answered_calls: frozenset[str] | set[str] = frozenset()
) -> list[ContentBlock]:
    """Content blocks for the user side of a request (system prompt parts are sent separately).

    Tool returns for ``answered_calls`` (calls the CLI has already answered) become text blocks.
    """
    blocks: list[ContentBlock] = []
    for part in request.parts:
        match part:
            case SystemPromptPart():
                continue
            case UserPromptPart():
                blocks.extend(user_content_blocks(part.content))
            case ToolReturnPart() if part.tool_call_id in answered_calls:
                blocks.append({"type": "text", "text": _answered_call_text(part)})
            case ToolReturnPart():
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": part.tool_call_id,
                        "content": part.model_response_str(),
                        "is_error": part.outcome in ("failed", "denied", "retried"),
                    }
                )
            case RetryFeedbackPart():
                blocks.append({"type": "text", "text": part.model_response()})
            case _:
                raise MessageConversionError(
                    f"Claude Code cannot send a {type(part).__name__} request part; "
                    "run the model through an Agent (which prepares messages) or remove it."
                )
    return blocks


def _answered_call_text(part: ToolReturnPart) -> str:
    if part.outcome == "retried":
        return (
            f"Your call to {part.tool_name} was not accepted: {part.model_response_str(wrap_if_error=False)}\n"
            f"Fix the errors and call {part.tool_name} again."
        )
    return f"{part.tool_name}: {part.model_response_str()}"


def user_content_blocks(content: str | Sequence[UserContent]) -> list[ContentBlock]:
    """Convert user prompt content into Anthropic blocks, failing clearly on what Claude cannot receive."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[ContentBlock] = []
    for item in content:
        match item:
            case str():
                blocks.append({"type": "text", "text": item})
            case TextContent():
                blocks.append({"type": "text", "text": item.content})
            case CachePoint():
                continue
            case ImageUrl():
                blocks.append({"type": "image", "source": {"type": "url", "url": item.url}})
            case DocumentUrl():
                blocks.append(_document_url_block(item))
            case BinaryContent():
                blocks.append(_binary_block(item))
            case AudioUrl() | VideoUrl() | UploadedFile():
                raise UnsupportedContentError(
                    f"Claude Code cannot receive {type(item).__name__} content "
                    "(supported: text, images, PDF and plain-text documents)."
                )
            case _:
                raise UnsupportedContentError(f"Claude Code cannot receive {type(item).__name__} content.")
    return blocks


def _document_url_block(item: DocumentUrl) -> ContentBlock:
    if item.media_type not in ("application/pdf", "text/plain"):
        raise UnsupportedContentError(
            f"Claude Code cannot receive a document of type {item.media_type!r} by URL (PDF or plain text only)."
        )
    return {"type": "document", "source": {"type": "url", "url": item.url}}


def _binary_block(item: BinaryContent) -> ContentBlock:
    media_type = item.media_type
    if item.is_image:
        signatures = _IMAGE_SIGNATURES.get(media_type)
        if signatures is None:
            raise UnsupportedContentError(
                f"Claude Code cannot receive images of type {media_type!r} (png, jpeg, gif or webp only)."
            )
        if not item.data.startswith(signatures):
            raise UnsupportedContentError(f"The BinaryContent image is not valid {media_type} data.")
        data = base64.b64encode(item.data).decode()
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if media_type == "application/pdf":
        data = base64.b64encode(item.data).decode()
        return {"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if media_type.startswith("text/"):
        text = item.data.decode("utf-8", errors="replace")
        return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    raise UnsupportedContentError(
        f"Claude Code cannot receive BinaryContent of type {media_type!r} (images, PDF and text only)."
    )


def transcript_of(history: Sequence[ModelMessage]) -> list[TranscriptEntry]:
    """The Anthropic message sequence equivalent to ``history``, for replay into a new session.

    A Claude Code response holds tool calls the CLI executed and their results in one ``ModelResponse``; on the
    wire these alternate between assistant ``tool_use`` and user ``tool_result`` messages, so they are split.
    """
    entries: list[TranscriptEntry] = []

    def add(role: Literal["user", "assistant"], blocks: list[ContentBlock]) -> None:
        if not blocks:
            return
        if entries and entries[-1].role == role:
            entries[-1].content.extend(blocks)
        else:
            entries.append(TranscriptEntry(role=role, content=list(blocks)))

    for message in history:
        if isinstance(message, ModelRequest):
            add("user", request_blocks(message))
            continue
        pending: list[ContentBlock] = []
        for part in message.parts:
            if PARENT_TOOL_CALL_ID_KEY in (getattr(part, "provider_details", None) or {}):
                continue  # a subagent's call or result: it happened inside the Agent call, which is replayed
            match part:
                case TextPart():
                    if part.content:
                        pending.append({"type": "text", "text": part.content})
                case ThinkingPart():
                    if part.signature and part.provider_name in (PROVIDER_NAME, "anthropic"):
                        pending.append({"type": "thinking", "thinking": part.content, "signature": part.signature})
                case ToolCallPart() | NativeToolCallPart():
                    name = (part.provider_details or {}).get(CLI_TOOL_NAME_KEY, part.tool_name)
                    pending.append(
                        {
                            "type": "tool_use",
                            "id": part.tool_call_id,
                            "name": name,
                            "input": part.args_as_dict(),
                        }
                    )
                case NativeToolReturnPart():
                    add("assistant", pending)
                    pending = []
                    is_error = part.outcome != "success"
                    add(
                        "user",
                        [
                            {
                                "type": "tool_result",
                                "tool_use_id": part.tool_call_id,
                                "content": part.model_response_str(),
                                "is_error": is_error,
                            }
                        ],
                    )
                case FilePart():
                    raise MessageConversionError("Claude Code cannot replay a response that holds a file part.")
                case _:
                    continue
        add("assistant", pending)
    return entries
