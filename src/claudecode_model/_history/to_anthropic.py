"""pydantic-ai request content to the Anthropic content blocks Claude Code receives."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Sequence
from typing import Any

from pydantic_ai.exceptions import UnsupportedSettingWarning
from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    RetryFeedbackPart,
    SystemPromptPart,
    TextContent,
    ToolReturnPart,
    UploadedFile,
    UserContent,
    UserPromptPart,
    VideoUrl,
)

from claudecode_model._history.cut_results import cap_text
from claudecode_model.exceptions import MessageConversionError, UnsupportedContentError

__all__ = ["ContentBlock", "request_blocks", "user_content_blocks"]

ContentBlock = dict[str, Any]
"""One Anthropic content block (``{"type": "text", ...}``, ``tool_result``, ``image``, ...)."""

_IMAGE_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


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
                # Cut as in a live turn: Claude sees the same conversation whichever way it reaches the CLI (a
                # result longer than the CLI shows would make it compact the conversation away).
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": part.tool_call_id,
                        "content": cap_text(part.model_response_str(), tool_use_id=part.tool_call_id),
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
    return f"{part.tool_name}: {cap_text(part.model_response_str(), tool_use_id=part.tool_call_id)}"


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
                warnings.warn(
                    "CachePoint markers are not supported by ClaudeCodeModel and are left out: Claude Code places its "
                    "own cache breakpoints (the unified `cache` setting turns caching off or sets its TTL).",
                    UnsupportedSettingWarning,
                    stacklevel=2,
                )
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
