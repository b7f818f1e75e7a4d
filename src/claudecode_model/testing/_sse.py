"""pydantic-ai response -> Anthropic Messages API response (SSE event stream or Message JSON)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from pydantic_ai.messages import (
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

__all__ = [
    "CachedUsage",
    "SSEEvent",
    "Usage",
    "content_blocks",
    "encode_events",
    "message_json",
    "stream_events",
    "text_of",
    "tool_text",
    "usage_for",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CachedUsage:
    """How a request's input tokens split between the cache and fresh processing."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int


_TOOL_ID_RE = re.compile(r"^toolu_[A-Za-z0-9_-]+$")
StopReason = Literal["end_turn", "tool_use", "max_tokens"]


class Usage(TypedDict):
    """Anthropic usage counts."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation: NotRequired[dict[str, int]]
    """The cache writes by lifetime (``ephemeral_5m_input_tokens``, ``ephemeral_1h_input_tokens``)."""


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its name and JSON data."""

    event: str
    data: dict[str, Any]

    def encode(self) -> bytes:
        """The event on the wire."""
        return f"event: {self.event}\ndata: {json.dumps(self.data, separators=(',', ':'))}\n\n".encode()


def encode_events(events: list[SSEEvent]) -> bytes:
    """Several events on the wire."""
    return b"".join(e.encode() for e in events)


def new_message_id() -> str:
    """A fresh Anthropic-style message id."""
    return f"msg_{uuid.uuid4().hex[:24]}"


def new_tool_use_id() -> str:
    """A fresh Anthropic-style tool_use id."""
    return f"toolu_{uuid.uuid4().hex[:24]}"


def new_server_tool_use_id() -> str:
    """A fresh Anthropic-style server_tool_use id."""
    return f"srvtoolu_{uuid.uuid4().hex[:24]}"


def content_blocks(response: ModelResponse) -> list[dict[str, Any]]:
    """The response's parts as Anthropic content blocks (text, tool_use, thinking).

    Native tool parts become the API's server tool blocks, as the API's own tools (web search) answer:
    ``NativeToolCallPart`` → ``server_tool_use``, ``NativeToolReturnPart`` → ``<tool name>_tool_result``.
    """
    blocks: list[dict[str, Any]] = []
    used_ids: set[str] = set()
    server_ids: dict[str, str] = {}
    for part in response.parts:
        match part:
            case TextPart():
                if part.content:
                    blocks.append({"type": "text", "text": part.content})
            case ToolCallPart():
                tool_id = part.tool_call_id
                if not _TOOL_ID_RE.match(tool_id or "") or tool_id in used_ids:
                    tool_id = new_tool_use_id()
                used_ids.add(tool_id)
                blocks.append({"type": "tool_use", "id": tool_id, "name": part.tool_name, "input": part.args_as_dict()})
            case ThinkingPart():
                signature = part.signature or f"offline-signature-{uuid.uuid4().hex}"
                blocks.append({"type": "thinking", "thinking": part.content, "signature": signature})
            case NativeToolCallPart():
                server_id = server_ids.setdefault(part.tool_call_id, new_server_tool_use_id())
                blocks.append(
                    {"type": "server_tool_use", "id": server_id, "name": part.tool_name, "input": part.args_as_dict()}
                )
            case NativeToolReturnPart():
                server_id = server_ids.setdefault(part.tool_call_id, new_server_tool_use_id())
                result_type = f"{part.tool_name}_tool_result"
                blocks.append({"type": result_type, "tool_use_id": server_id, "content": part.content})
            case _:
                logger.warning("offline backend cannot send a %s part; skipping it", type(part).__name__)
    return blocks


CHARACTERS_PER_TOKEN = 4
"""The offline token estimate: about one token per four characters of text, as for English with Claude."""


def estimate_tokens(text: str) -> int:
    """Tokens for ``text`` by the offline estimate (at least 1)."""
    return max(1, round(len(text) / CHARACTERS_PER_TOKEN))


_ATTACHMENT_TEXT = " " * (400 * CHARACTERS_PER_TOKEN)
"""What an image or document counts for: a few hundred tokens."""


def text_of(value: Any) -> str:
    """The text a model reads in a request or response fragment: strings as they are, structures as compact JSON,
    leaving out ids, signatures and cache markers (which no tokenizer counts as text)."""
    match value:
        case str():
            return value
        case list():
            return "".join(text_of(item) for item in value)
        case dict():
            if value.get("type") in ("text", "thinking"):
                return str(value.get("text", value.get("thinking", "")))
            if value.get("type") == "tool_use":
                return str(value.get("name", "")) + json.dumps(value.get("input", {}), separators=(",", ":"))
            if value.get("type") == "tool_result":
                return text_of(value.get("content", ""))
            if value.get("type") in ("image", "document"):
                return _ATTACHMENT_TEXT
            return text_of(value.get("content", "")) if "content" in value else json.dumps(value, separators=(",", ":"))
        case _:
            return "" if value is None else json.dumps(value, separators=(",", ":"), default=str)


def tool_text(tool: Mapping[str, Any]) -> str:
    """The text a tool definition counts for: its name, description and input schema as compact JSON."""
    definition = {key: tool.get(key) for key in ("name", "description", "input_schema")}
    return json.dumps(definition, separators=(",", ":"))


def request_text(request_body: Mapping[str, Any]) -> str:
    """The text of a request that counts as input: system prompt, messages and tool definitions."""
    offered = request_body.get("tools")
    tools = [tool_text(tool) for tool in (offered if isinstance(offered, list) else []) if isinstance(tool, dict)]
    return text_of(request_body.get("system", "")) + text_of(request_body.get("messages", [])) + "".join(tools)


def usage_for(
    response: ModelResponse,
    request_body: dict[str, Any],
    blocks: list[dict[str, Any]],
    cached: CachedUsage | None = None,
) -> Usage:
    """Token counts: the brain's own if it set any, else about one token per four characters of the text.

    ``cached`` is how the prompt cache split the input (when the backend emulates it); input counts the brain set
    itself win over it.
    """
    brain = response.usage
    output_tokens = brain.output_tokens or estimate_tokens(text_of(blocks))
    if cached is not None and not (brain.input_tokens or brain.cache_write_tokens or brain.cache_read_tokens):
        return Usage(
            input_tokens=cached.input_tokens,
            output_tokens=output_tokens,
            cache_creation_input_tokens=cached.cache_creation_input_tokens,
            cache_read_input_tokens=cached.cache_read_input_tokens,
            cache_creation={
                "ephemeral_5m_input_tokens": cached.cache_creation_input_tokens,
                "ephemeral_1h_input_tokens": 0,
            },
        )
    return Usage(
        input_tokens=brain.input_tokens or estimate_tokens(request_text(request_body)),
        output_tokens=output_tokens,
        cache_creation_input_tokens=brain.cache_write_tokens,
        cache_read_input_tokens=brain.cache_read_tokens,
    )


def stop_reason(response: ModelResponse, blocks: list[dict[str, Any]]) -> StopReason:
    """``tool_use`` if any tool is called, ``max_tokens`` for a ``length`` finish, else ``end_turn``."""
    if any(b["type"] == "tool_use" for b in blocks):
        return "tool_use"
    if response.finish_reason == "length":
        return "max_tokens"
    return "end_turn"


def message_json(
    response: ModelResponse,
    *,
    message_id: str,
    model: str,
    request_body: dict[str, Any],
    cached: CachedUsage | None = None,
) -> dict[str, Any]:
    """The non-streaming Message JSON for a response (``cached``: see :func:`usage_for`)."""
    blocks = content_blocks(response)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason(response, blocks),
        "stop_sequence": None,
        "usage": dict(usage_for(response, request_body, blocks, cached)),
    }


def message_start(message_id: str, model: str, usage: Usage) -> SSEEvent:
    """The ``message_start`` event (empty content, input usage)."""
    start_usage = {**usage, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    return SSEEvent("message_start", {"type": "message_start", "message": message})


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _json_chunks(text: str, pieces: int = 3) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return _chunks(text, size)


def _delta(index: int, delta: dict[str, Any]) -> SSEEvent:
    return SSEEvent("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _block_events(index: int, block: dict[str, Any], text_chunk_size: int) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    match block["type"]:
        case "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            events.extend(
                _delta(index, {"type": "text_delta", "text": c}) for c in _chunks(block["text"], text_chunk_size)
            )
        case "tool_use" | "server_tool_use":
            start = {"type": block["type"], "id": block["id"], "name": block["name"], "input": {}}
            args = json.dumps(block["input"], separators=(",", ":"))
            events.extend(_delta(index, {"type": "input_json_delta", "partial_json": c}) for c in _json_chunks(args))
        case result if result.endswith("_tool_result"):
            start = dict(block)  # a server tool's result arrives whole, without deltas
        case "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            events.extend(
                _delta(index, {"type": "thinking_delta", "thinking": c})
                for c in _chunks(block["thinking"], text_chunk_size)
            )
            events.append(_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
        case other:
            raise ValueError(f"unexpected block type {other!r}")
    first = SSEEvent("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    stop = SSEEvent("content_block_stop", {"type": "content_block_stop", "index": index})
    return [first, *events, stop]


def stream_events(
    response: ModelResponse,
    *,
    message_id: str,
    model: str,
    request_body: dict[str, Any],
    text_chunk_size: int,
    cached: CachedUsage | None = None,
) -> list[SSEEvent]:
    """The full SSE event sequence for a response, in the order the Messages API sends it (``cached``: see
    :func:`usage_for`)."""
    blocks = content_blocks(response)
    usage = usage_for(response, request_body, blocks, cached)
    events = [message_start(message_id, model, usage)]
    for index, block in enumerate(blocks):
        events.extend(_block_events(index, block, text_chunk_size))
    delta = {"stop_reason": stop_reason(response, blocks), "stop_sequence": None}
    events.append(SSEEvent("message_delta", {"type": "message_delta", "delta": delta, "usage": dict(usage)}))
    events.append(SSEEvent("message_stop", {"type": "message_stop"}))
    return events
