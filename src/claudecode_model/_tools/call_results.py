"""pydantic-ai's answers to tool calls as the MCP results Claude Code passes on to Claude.

When pydantic-ai runs the agent's tools, its next request carries one part per call Claude made: a
``ToolReturnPart`` (a result, a failure, a retry request, a denial, or pydantic-ai's "not executed" note for a call
it skipped) or a legacy ``RetryPromptPart``. Each becomes the result of the MCP call the CLI is waiting for:

* text as MCP text content, exactly the text pydantic-ai sends any other model (no ``{"error": ...}`` wrapper: MCP
  has its own error flag, ``isError``, which failures and retries set);
* images (``BinaryContent``) as MCP image content, which Claude Code forwards as image blocks of the tool result;
* text files inline; other files (PDF, ...) as MCP embedded resources, which Claude Code saves to a file and tells
  Claude about; URLs as a line of text naming them;
* text above what Claude Code shows Claude of one tool result is cut, with a marker saying so. The CLI's limit is
  50,000 characters unless the tool's listing raises it (``_meta["anthropic/maxResultSizeChars"]``), as the tool
  servers of this package do, to the most the CLI allows, 500,000 (:data:`RESULT_SIZE_META`); above its limit the
  CLI would show Claude a 2 KB preview and the path of a file Claude cannot read without the ``Read`` tool.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)
from pydantic_ai.messages import (
    ERROR_OUTCOMES,
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelRequestPart,
    RetryPromptPart,
    ToolReturnPart,
    VideoUrl,
)

__all__ = [
    "CLI_INLINE_LIMIT",
    "NOT_ANSWERED_TEXT",
    "RESULT_SIZE_META",
    "TEXT_LIMIT",
    "anthropic_tool_result",
    "cap_text",
    "mcp_result",
    "not_answered_result",
    "results_by_call",
]

logger = logging.getLogger(__name__)

CLI_INLINE_LIMIT = 500_000
"""Claude Code shows Claude a tool result inline up to this many characters of text (the most a tool's listing can
ask for: the CLI's default is 50,000); a longer one is saved to a file."""

RESULT_SIZE_META = {"anthropic/maxResultSizeChars": CLI_INLINE_LIMIT}
"""The ``_meta`` of a tool's listing that has Claude Code show its results inline up to :data:`CLI_INLINE_LIMIT`."""

TEXT_LIMIT = 495_000
"""The text of one tool result is cut to this many characters (marker included), safely below the inline limit."""

NOT_ANSWERED_TEXT = "The tool call was not executed: the agent did not return a result for it."

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def cap_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` unchanged if it fits ``limit`` characters, else its start and a marker, ``limit`` in all."""
    if len(text) <= limit:
        return text
    marker = (
        f"\n[tool result cut: showing the first {{shown:,}} of {len(text):,} characters; "
        f"Claude Code shows at most {CLI_INLINE_LIMIT:,} characters of a tool result]"
    )
    shown = max(limit - len(marker.format(shown=limit)), 0)
    return text[:shown] + marker.format(shown=shown)


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def _file_block(item: object) -> ContentBlock:
    """One multimodal item of a tool result as MCP content."""
    match item:
        case BinaryContent() if item.media_type in _IMAGE_TYPES:
            data = base64.b64encode(item.data).decode()
            return ImageContent(type="image", data=data, mime_type=item.media_type)
        case BinaryContent() if item.media_type.startswith("text/"):
            return _text(item.data.decode("utf-8", errors="replace"))
        case BinaryContent():
            blob = base64.b64encode(item.data).decode()
            uri = f"file:///{item.identifier}"
            return EmbeddedResource(
                type="resource", resource=BlobResourceContents(uri=uri, mime_type=item.media_type, blob=blob)
            )
        case ImageUrl() | DocumentUrl() | AudioUrl() | VideoUrl():
            return _text(f"[{item.kind.removesuffix('-url')} at {item.url}]")
        case _:
            return _text(str(item))


def _capped(blocks: list[ContentBlock], limit: int) -> list[ContentBlock]:
    """The blocks with their text cut so that all text together fits ``limit`` characters."""
    total = sum(len(block.text) for block in blocks if isinstance(block, TextContent))
    if total <= limit:
        return blocks
    joined = "\n".join(block.text for block in blocks if isinstance(block, TextContent))
    others = [block for block in blocks if not isinstance(block, TextContent)]
    return [_text(cap_text(joined, limit)), *others]


def mcp_result(part: ModelRequestPart, *, limit: int = TEXT_LIMIT) -> CallToolResult:
    """The MCP result for pydantic-ai's answer ``part`` to one tool call (a ``ToolReturnPart`` or ``RetryPromptPart``).

    Raises:
        TypeError: ``part`` answers no tool call.
    """
    if isinstance(part, ToolReturnPart):
        return _return_result(part, limit)
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        text = part.model_response()
        return CallToolResult(content=[_text(cap_text(text, limit))], is_error=True)
    raise TypeError(f"{type(part).__name__} is not the answer to a tool call")


def _return_result(part: ToolReturnPart[Any], limit: int) -> CallToolResult:
    is_error = part.outcome in ERROR_OUTCOMES
    blocks: list[ContentBlock] = []
    for item in part.content_items(mode="str", wrap_if_error=False):
        if isinstance(item, str):
            if item:
                blocks.append(_text(item))
        else:
            blocks.append(_file_block(item))
    if not blocks:
        blocks.append(_text(""))
    return CallToolResult(content=_capped(blocks, limit), is_error=is_error)


def not_answered_result(tool_name: str | None = None) -> CallToolResult:
    """The error result of a pending call that pydantic-ai's request did not answer."""
    text = NOT_ANSWERED_TEXT if tool_name is None else NOT_ANSWERED_TEXT.replace("tool call", f"call of {tool_name}")
    return CallToolResult(content=[_text(text)], is_error=True)


def results_by_call(parts: Sequence[ModelRequestPart]) -> dict[str, ModelRequestPart]:
    """The parts of a request that answer tool calls, by ``tool_call_id`` (the last one wins)."""
    answers: dict[str, ModelRequestPart] = {}
    for part in parts:
        if isinstance(part, ToolReturnPart) or (isinstance(part, RetryPromptPart) and part.tool_name is not None):
            answers[part.tool_call_id] = part
    return answers


def anthropic_tool_result(tool_use_id: str, result: CallToolResult) -> dict[str, Any]:
    """An MCP result as the Anthropic ``tool_result`` block Claude Code makes of it (for a replayed transcript)."""
    content: list[dict[str, Any]] = []
    for block in result.content:
        match block:
            case TextContent():
                content.append({"type": "text", "text": block.text})
            case ImageContent():
                source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
                content.append({"type": "image", "source": source})
            case _:
                content.append({"type": "text", "text": f"[{block.type} content]"})
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": bool(result.is_error)}
