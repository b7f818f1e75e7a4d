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
  CLI would show Claude a 2 KB preview and the path of a file Claude cannot read without the ``Read`` tool. The
  marker of a cut result names the call's ``tool_use`` id and the tools that read the rest
  (:mod:`claudecode_model._history.cut_results`, served by :mod:`.result_reader`).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

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

from claudecode_model._history.cut_results import CLI_INLINE_LIMIT, TEXT_LIMIT, cap_text
from claudecode_model._tools.core import McpContent, McpResponse, McpTextContent, text_result

__all__ = [
    "NOT_ANSWERED_TEXT",
    "RESULT_SIZE_META",
    "anthropic_tool_result",
    "block_texts",
    "mcp_result",
    "not_answered_result",
    "result_text",
    "results_by_call",
]

logger = logging.getLogger(__name__)

RESULT_SIZE_META = {"anthropic/maxResultSizeChars": CLI_INLINE_LIMIT}
"""The ``_meta`` of a tool's listing that has Claude Code show its results inline up to :data:`CLI_INLINE_LIMIT`."""

NOT_ANSWERED_TEXT = "The tool call was not executed: the agent did not return a result for it."

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _text(text: str) -> McpTextContent:
    return {"type": "text", "text": text}


def _file_block(item: object) -> McpContent:
    """One multimodal item of a tool result as MCP content (in MCP's JSON form)."""
    match item:
        case BinaryContent() if item.media_type in _IMAGE_TYPES:
            return {"type": "image", "data": base64.b64encode(item.data).decode(), "mimeType": item.media_type}
        case BinaryContent() if item.media_type.startswith("text/"):
            return _text(item.data.decode("utf-8", errors="replace"))
        case BinaryContent():
            blob = base64.b64encode(item.data).decode()
            resource: dict[str, object] = {
                "uri": f"file:///{item.identifier}",
                "mimeType": item.media_type,
                "blob": blob,
            }
            return {"type": "resource", "resource": resource}
        case ImageUrl() | DocumentUrl() | AudioUrl() | VideoUrl():
            return _text(f"[{item.kind.removesuffix('-url')} at {item.url}]")
        case _:
            return _text(str(item))


def block_texts(blocks: Sequence[McpContent]) -> list[str]:
    """The texts of a result's text blocks."""
    return [block["text"] for block in blocks if block["type"] == "text"]


def _capped(blocks: list[McpContent], limit: int, tool_use_id: str | None = None) -> list[McpContent]:
    """The blocks with their text cut so that all text together fits ``limit`` characters."""
    texts = block_texts(blocks)
    if sum(map(len, texts)) <= limit:
        return blocks
    others = [block for block in blocks if block["type"] != "text"]
    return [_text(cap_text("\n".join(texts), limit, tool_use_id=tool_use_id)), *others]


def mcp_result(part: ModelRequestPart, *, limit: int = TEXT_LIMIT) -> McpResponse:
    """The MCP result for pydantic-ai's answer ``part`` to one tool call (a ``ToolReturnPart`` or ``RetryPromptPart``).

    A tool return whose text is cut names the tools that read the rest (:func:`result_text` is what they read).

    Raises:
        TypeError: ``part`` answers no tool call.
    """
    if isinstance(part, ToolReturnPart):
        blocks = _capped(_return_blocks(part), limit, part.tool_call_id)
        return {"content": blocks, "isError": part.outcome in ERROR_OUTCOMES}
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        return text_result(cap_text(part.model_response(), limit), is_error=True)
    raise TypeError(f"{type(part).__name__} is not the answer to a tool call")


def _return_blocks(part: ToolReturnPart[Any]) -> list[McpContent]:
    blocks: list[McpContent] = []
    for item in part.content_items(mode="str", wrap_if_error=False):
        if isinstance(item, str):
            if item:
                blocks.append(_text(item))
        else:
            blocks.append(_file_block(item))
    if not blocks:
        blocks.append(_text(""))
    return blocks


def result_text(part: ToolReturnPart[Any]) -> str:
    """All the text of a tool return as Claude Code gets it (its text blocks joined): what :func:`mcp_result` cuts."""
    if isinstance(part.content, str):
        return part.content
    return "\n".join(block_texts(_return_blocks(part)))


def not_answered_result(tool_name: str | None = None) -> McpResponse:
    """The error result of a pending call that pydantic-ai's request did not answer."""
    text = NOT_ANSWERED_TEXT if tool_name is None else NOT_ANSWERED_TEXT.replace("tool call", f"call of {tool_name}")
    return text_result(text, is_error=True)


def results_by_call(parts: Sequence[ModelRequestPart]) -> dict[str, ModelRequestPart]:
    """The parts of a request that answer tool calls, by ``tool_call_id`` (the last one wins)."""
    answers: dict[str, ModelRequestPart] = {}
    for part in parts:
        if isinstance(part, ToolReturnPart) or (isinstance(part, RetryPromptPart) and part.tool_name is not None):
            answers[part.tool_call_id] = part
    return answers


def anthropic_tool_result(tool_use_id: str, result: McpResponse) -> dict[str, Any]:
    """An MCP result as the Anthropic ``tool_result`` block Claude Code makes of it (for a replayed transcript)."""
    content: list[dict[str, Any]] = []
    for block in result["content"]:
        match block["type"]:
            case "text":
                content.append({"type": "text", "text": block["text"]})
            case "image":
                source = {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}
                content.append({"type": "image", "source": source})
            case "resource":
                content.append({"type": "text", "text": "[resource content]"})
    is_error = bool(result.get("isError", False))
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}
