"""An emulation of the Anthropic API's prompt caching, for the offline backend.

The API caches a request's prefix at each ``cache_control`` breakpoint: everything up to and including the marked
block, in the order tools, system, messages. A later request whose prefix is byte-for-byte the same reads it from
the cache instead of processing it again: its usage reports the cached part as ``cache_read_input_tokens`` (billed
at a tenth of the input price), the part newly written at its own breakpoints as ``cache_creation_input_tokens``
(billed at 1.25 times the input price) and only the rest as ``input_tokens``. The cache is shared by every client of
an organisation, so a conversation continued by another process finds what the first one wrote.

Rules kept here (those of the API's documentation):

- a hit is an exact match of every block before and including a breakpoint, for the same model (``cache_control``
  markers themselves do not count, and content the API reads the same counts the same: text given as a string or
  as one text block, a tool result without ``is_error`` or with ``is_error: false``);
- besides the breakpoint itself, the 20 block boundaries before it are looked up, and the longest cached prefix
  found at any breakpoint is read;
- the prefix at every breakpoint is written (or refreshed); a prefix shorter than the model's minimum cacheable
  length is neither written nor read;
- an entry lives 5 minutes after it was last written or read.

Token counts are the backend's estimate: about one token per four characters of the text a model reads.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._sse import CHARACTERS_PER_TOKEN, CachedUsage, text_of, tool_text

__all__ = ["PromptCache", "shared_prompt_cache"]

DEFAULT_TTL_SECONDS = 300.0
"""The API's default cache lifetime (``"ttl": "5m"``), renewed by every hit."""

DEFAULT_MIN_TOKENS = 1024
"""The API's minimum cacheable prompt length for most models (shorter prefixes are not cached)."""

LOOKBACK_BLOCKS = 20
"""How many block boundaries before a breakpoint the API also checks for a cached prefix."""


@dataclass(frozen=True)
class _Block:
    key: str
    """Digest of the prefix that ends with this block."""
    end_tokens: int
    """Estimated tokens of the prefix that ends with this block."""
    breakpoint: bool


class PromptCache:
    """The prefixes cached at ``cache_control`` breakpoints, with their expiry (thread-safe).

    ``ttl`` is the lifetime of an entry after its last use, ``min_tokens`` the minimum cacheable prefix length,
    ``clock`` the time source (seconds, monotonic).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL_SECONDS,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if min_tokens < 0:
            raise ValueError("min_tokens must not be negative")
        self.ttl = ttl
        self.min_tokens = min_tokens
        self._clock = clock
        self._lock = threading.Lock()
        self._expiry: dict[str, float] = {}

    def __len__(self) -> int:
        """How many prefixes are cached and not expired."""
        now = self._clock()
        with self._lock:
            return sum(1 for expires in self._expiry.values() if expires > now)

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._expiry.clear()

    def serve(self, body: Mapping[str, Any], total_tokens: int) -> CachedUsage:
        """Look ``body``'s prefixes up, write those at its breakpoints, and split ``total_tokens`` accordingly."""
        blocks = _blocks(body)
        now = self._clock()
        with self._lock:
            for key in [key for key, expires in self._expiry.items() if expires <= now]:
                del self._expiry[key]
            read = self._longest_hit(blocks)
            read_tokens = blocks[read].end_tokens if read is not None else 0
            written_tokens = read_tokens
            for block in blocks:
                if not block.breakpoint or block.end_tokens < self.min_tokens:
                    continue
                self._expiry[block.key] = now + self.ttl
                written_tokens = max(written_tokens, block.end_tokens)
            if read is not None:
                self._expiry[blocks[read].key] = now + self.ttl
        total = max(total_tokens, written_tokens)
        return CachedUsage(
            input_tokens=total - written_tokens,
            cache_creation_input_tokens=written_tokens - read_tokens,
            cache_read_input_tokens=read_tokens,
        )

    def _longest_hit(self, blocks: list[_Block]) -> int | None:
        """The index of the last block of the longest cached prefix a breakpoint reaches (None: no hit)."""
        best: int | None = None
        for index, block in enumerate(blocks):
            if not block.breakpoint:
                continue
            for candidate in range(index, max(-1, index - LOOKBACK_BLOCKS - 1), -1):
                if best is not None and candidate <= best:
                    break
                entry = blocks[candidate]
                if entry.key in self._expiry and entry.end_tokens >= self.min_tokens:
                    best = candidate
                    break
        return best


_SHARED = PromptCache()


def shared_prompt_cache() -> PromptCache:
    """The process-wide cache every ``OfflineBackend(prompt_cache=True)`` uses (as the API's is organisation-wide)."""
    return _SHARED


def _blocks(body: Mapping[str, Any]) -> list[_Block]:
    """The request's blocks in cache order (tools, system, messages), each with the digest of its prefix."""
    digest = hashlib.sha256(str(body.get("model", "")).encode())
    blocks: list[_Block] = []
    characters = 0
    for identity, text, breakpoint in _prefix_items(body):
        digest.update(json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str).encode())
        digest.update(b"\x00")
        characters += len(text)
        blocks.append(_Block(digest.copy().hexdigest(), round(characters / CHARACTERS_PER_TOKEN), breakpoint))
    return blocks


def _prefix_items(body: Mapping[str, Any]) -> list[tuple[Any, str, bool]]:
    """Each block as (what identifies it, the text it counts for, whether it carries ``cache_control``)."""
    items: list[tuple[Any, str, bool]] = []
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            items.append((["tool", _unmarked(tool)], tool_text(tool), "cache_control" in tool))
    for block in _content_blocks(body.get("system")):
        items.append((["system", _unmarked(block)], text_of(block), "cache_control" in block))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        for position, block in enumerate(_content_blocks(message.get("content"))):
            identity = ["message", role, position == 0, _unmarked(block)]
            items.append((identity, text_of(block), "cache_control" in block))
    return items


def _content_blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _unmarked(value: Any) -> Any:
    """``value`` as the model reads it: without ``cache_control`` markers (not part of the cached content) at any
    depth, a tool result's text given as a string as the one text block it stands for, ``is_error: false`` as
    absent."""
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    block = {key: _unmarked(item) for key, item in value.items() if key != "cache_control"}
    if block.get("type") == "tool_result":
        if isinstance(block.get("content"), str):
            block["content"] = [{"type": "text", "text": block["content"]}]
        if block.get("is_error") is False:
            del block["is_error"]
    return block
