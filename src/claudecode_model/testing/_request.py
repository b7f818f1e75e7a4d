"""Anthropic Messages API request -> pydantic-ai messages and tool definitions, and the recorded request."""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

__all__ = [
    "CLIAddition",
    "ParsedRequest",
    "RecordedRequest",
    "ToolResult",
    "is_cli_addition",
    "parse_request",
    "strip_noise",
]

logger = logging.getLogger(__name__)

_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_TOTAL_TOKENS_RE = re.compile(r"<total_tokens>[^<]*</total_tokens>")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def strip_noise(text: str) -> str:
    """``text`` without the CLI's ``<system-reminder>`` blocks and ``<total_tokens>`` reminders.

    Text without noise is returned unchanged; otherwise the remainder is stripped of surrounding whitespace.
    """
    cleaned = _TOTAL_TOKENS_RE.sub("", _REMINDER_RE.sub("", text))
    return text if cleaned == text else cleaned.strip()


class CLIAddition(NamedTuple):
    """A block of a request that the CLI wrote itself, not the library: see :meth:`RecordedRequest.cli_additions`."""

    message_index: int
    """The index of the message in the request's ``messages``."""
    role: str
    """``"user"`` (a reminder in a user turn: an expanded file, a command's output, a hook's note) or ``"system"``
    (the CLI's per-turn context: environment, date, model)."""
    text: str
    """The block's whole text."""


_CLI_MARKERS = ("<system-reminder>", "<command-name>", "<command-message>", "<local-command-stdout>", "<bash-input>")


def is_cli_addition(text: str) -> bool:
    """Whether a user text block was written by the CLI (a reminder, a slash command's or a shell shortcut's
    output) rather than sent by the library."""
    stripped = text.lstrip()
    return stripped.startswith(_CLI_MARKERS) or _TOTAL_TOKENS_RE.fullmatch(stripped.strip()) is not None


class ToolResult(NamedTuple):
    """One ``tool_result`` block of a request, noise stripped."""

    tool_use_id: str
    text: str
    is_error: bool


@dataclass(frozen=True)
class ParsedRequest:
    """What the brain sees of one request."""

    system_blocks: list[str]
    messages: list[ModelMessage]
    tools: list[ToolDefinition]


def _as_blocks(content: object) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [cast("Mapping[str, Any]", b) for b in content if isinstance(b, Mapping)]
    return []


def _unchanged(text: str) -> str:
    return text


def _text_of(blocks: Sequence[Mapping[str, Any]], clean: Callable[[str], str]) -> str:
    texts = [clean(str(b.get("text", ""))) for b in blocks if b.get("type") == "text"]
    return "\n".join(t for t in texts if t)


def _decode_base64(data: object) -> bytes:
    try:
        return base64.b64decode(str(data), validate=False)
    except (binascii.Error, ValueError):
        logger.debug("undecodable base64 payload in request; keeping its raw text")
        return str(data).encode()


def _media(block: Mapping[str, Any]) -> UserContent | None:
    """An image or document block as pydantic-ai content (None for source kinds we cannot express)."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    kind = source.get("type")
    is_image = block.get("type") == "image"
    if kind == "base64":
        default_type = "image/png" if is_image else "application/pdf"
        return BinaryContent(
            _decode_base64(source.get("data", "")), media_type=str(source.get("media_type") or default_type)
        )
    if kind == "url":
        url = str(source.get("url", ""))
        return ImageUrl(url) if is_image else DocumentUrl(url)
    if kind == "text":
        return BinaryContent(
            str(source.get("data", "")).encode(), media_type=str(source.get("media_type") or "text/plain")
        )
    logger.debug("ignoring %s block with source type %r", block.get("type"), kind)
    return None


def _tool_result_part(
    block: Mapping[str, Any], tool_names: Mapping[str, str], clean: Callable[[str], str]
) -> ToolReturnPart:
    tool_use_id = str(block.get("tool_use_id", ""))
    blocks = _as_blocks(block.get("content", ""))
    text = _text_of(blocks, clean)
    media = [m for b in blocks if b.get("type") in ("image", "document") and (m := _media(b)) is not None]
    content: str | list[Any] = [text, *media] if media else text
    return ToolReturnPart(
        tool_name=tool_names.get(tool_use_id, "unknown_tool"),
        content=content,
        tool_call_id=tool_use_id,
        outcome="failed" if block.get("is_error") else "success",
    )


def _user_parts(
    blocks: Sequence[Mapping[str, Any]], tool_names: Mapping[str, str], clean: Callable[[str], str]
) -> list[ModelRequestPart]:
    parts: list[ModelRequestPart] = []
    content: list[UserContent] = []
    for block in blocks:
        match block.get("type"):
            case "tool_result":
                parts.append(_tool_result_part(block, tool_names, clean))
            case "text":
                text = clean(str(block.get("text", "")))
                if text:
                    content.append(text)
            case "image" | "document":
                item = _media(block)
                if item is not None:
                    content.append(item)
            case other:
                logger.debug("ignoring user content block of type %r", other)
    if content:
        only = content[0]
        parts.append(UserPromptPart(only if len(content) == 1 and isinstance(only, str) else content))
    return parts


def _assistant_response(blocks: Sequence[Mapping[str, Any]], tool_names: dict[str, str]) -> ModelResponse:
    parts: list[ModelResponsePart] = []
    for block in blocks:
        match block.get("type"):
            case "text":
                parts.append(TextPart(str(block.get("text", ""))))
            case "tool_use":
                tool_id = str(block.get("id", ""))
                name = str(block.get("name", ""))
                tool_names[tool_id] = name
                raw_input = block.get("input")
                args = dict(raw_input) if isinstance(raw_input, Mapping) else {}
                parts.append(ToolCallPart(name, args, tool_call_id=tool_id))
            case "thinking":
                parts.append(ThinkingPart(str(block.get("thinking", "")), signature=block.get("signature")))
            case "redacted_thinking":
                parts.append(ThinkingPart("", signature=str(block.get("data", "")), provider_name="anthropic"))
            case other:
                logger.debug("ignoring assistant content block of type %r", other)
    return ModelResponse(parts=parts)


def _tool_definition(tool: Mapping[str, Any]) -> ToolDefinition:
    schema = tool.get("input_schema")
    description = tool.get("description")
    return ToolDefinition(
        name=str(tool.get("name", "")),
        parameters_json_schema=dict(schema) if isinstance(schema, Mapping) else dict(_EMPTY_SCHEMA),
        description=str(description) if description is not None else None,
    )


def system_blocks_of(body: Mapping[str, Any]) -> list[str]:
    """The text of every system block of a request body, in order, noise included."""
    system = body.get("system")
    if isinstance(system, str):
        return [system]
    return [str(b.get("text", "")) for b in _as_blocks(system) if b.get("type") == "text"]


def parse_request(body: Mapping[str, Any], *, keep_cli_additions: bool = False) -> ParsedRequest:
    """Translate an Anthropic Messages API request body into what a pydantic-ai model sees.

    The CLI's ``<system-reminder>`` and ``<total_tokens>`` texts are stripped unless ``keep_cli_additions``.
    """
    clean = _unchanged if keep_cli_additions else strip_noise
    system_blocks = system_blocks_of(body)
    system_parts = [SystemPromptPart(text) for text in system_blocks]
    tool_names: dict[str, str] = {}
    messages: list[ModelMessage] = []
    raw_messages = body.get("messages")
    pending: list[ModelRequestPart] = list(system_parts)
    user_turn_open = False  # a user message, even an empty one, always becomes a ModelRequest
    for raw in raw_messages if isinstance(raw_messages, list) else []:
        if not isinstance(raw, Mapping):
            continue
        blocks = _as_blocks(raw.get("content", ""))
        match raw.get("role"):
            case "assistant":
                if pending or user_turn_open:
                    messages.append(ModelRequest(parts=pending))
                pending, user_turn_open = [], False
                messages.append(_assistant_response(blocks, tool_names))
            case "system":
                # The CLI sends per-turn context (environment, date, model) as a mid-conversation message.
                texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
                pending.extend(SystemPromptPart(text) for text in texts if text)
            case _:
                pending.extend(_user_parts(blocks, tool_names, clean))
                user_turn_open = True
    if pending or user_turn_open:
        messages.append(ModelRequest(parts=pending))
    raw_tools = body.get("tools")
    tools = [_tool_definition(t) for t in raw_tools if isinstance(t, Mapping)] if isinstance(raw_tools, list) else []
    return ParsedRequest(system_blocks=system_blocks, messages=messages, tools=tools)


def _user_texts(message: ModelMessage) -> list[str]:
    if not isinstance(message, ModelRequest):
        return []
    texts: list[str] = []
    for part in message.parts:
        if not isinstance(part, UserPromptPart):
            continue
        if isinstance(part.content, str):
            texts.append(part.content)
        else:
            texts.extend(item for item in part.content if isinstance(item, str))
    return texts


@dataclass(frozen=True)
class RecordedRequest:
    """One request the backend received, raw and as the brain saw it.

    ``system`` joins every system block with blank lines (the CLI's own blocks and noise included);
    ``messages`` are pydantic-ai messages minus the CLI's ``<system-reminder>`` and ``<total_tokens>`` noise.
    """

    raw: dict[str, Any]
    headers: dict[str, str]
    path: str
    stream: bool
    system: str
    messages: list[ModelMessage]
    tools: list[ToolDefinition]
    system_blocks: list[str] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        """The model the request named."""
        model = self.raw.get("model")
        return str(model) if model is not None else None

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools the request offered, in order."""
        return [t.name for t in self.tools]

    def tool(self, name: str) -> ToolDefinition:
        """The offered tool called ``name`` (KeyError if absent)."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def user_texts(self) -> list[str]:
        """Every user text of the conversation, in order, noise stripped."""
        return [text for message in self.messages for text in _user_texts(message)]

    def last_user_text(self) -> str:
        """The texts of the last request message that holds user text, joined with newlines ('' if none)."""
        for message in reversed(self.messages):
            texts = _user_texts(message)
            if texts:
                return "\n".join(texts)
        return ""

    def tool_calls(self) -> list[ToolCallPart]:
        """Every tool call the assistant made earlier in the conversation, in order."""
        return [
            part
            for message in self.messages
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        ]

    def tool_results(self) -> list[ToolResult]:
        """Every tool result of the conversation, in order: ``(tool_use_id, text, is_error)``."""
        results: list[ToolResult] = []
        for message in self.messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    text = _text_content(part.content)
                    results.append(ToolResult(part.tool_call_id, text, part.outcome != "success"))
        return results

    def cli_additions(self) -> list[CLIAddition]:
        """Every block the CLI added to the conversation on its own, in order: text blocks of user turns that are
        CLI reminders or command output (an ``@file`` the CLI expanded arrives as such blocks), and the blocks of
        its ``system`` turns. Tool results are not searched: their text is the tool's."""
        additions: list[CLIAddition] = []
        raw_messages = self.raw.get("messages")
        for index, message in enumerate(raw_messages if isinstance(raw_messages, list) else []):
            if not isinstance(message, Mapping):
                continue
            role = str(message.get("role", ""))
            for block in _as_blocks(message.get("content")):
                if block.get("type") != "text":
                    continue
                text = str(block.get("text", ""))
                if role == "system" or (role == "user" and is_cli_addition(text)):
                    additions.append(CLIAddition(index, role, text))
        return additions

    def has_image(self) -> bool:
        """Whether any user message or tool result carries an image."""
        for block in _raw_blocks(self.raw):
            if block.get("type") == "image":
                return True
            if block.get("type") == "tool_result" and any(
                b.get("type") == "image" for b in _as_blocks(block.get("content"))
            ):
                return True
        return False

    def has_document(self) -> bool:
        """Whether any user message carries a document block."""
        return any(block.get("type") == "document" for block in _raw_blocks(self.raw))

    def has_thinking(self) -> bool:
        """Whether the conversation holds earlier thinking blocks."""
        return any(block.get("type") in ("thinking", "redacted_thinking") for block in _raw_blocks(self.raw))


def _text_content(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(item for item in content if isinstance(item, str))
    return ""


def _raw_blocks(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        return []
    return [b for m in raw_messages if isinstance(m, Mapping) for b in _as_blocks(m.get("content"))]
