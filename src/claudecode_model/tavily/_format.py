"""The contract's output formats, and the RAG context built from search results."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from claudecode_model.tavily._models import ExtractFailure, ExtractResult, SearchResult

__all__ = [
    "DEFAULT_CONTEXT_MAX_TOKENS",
    "build_context",
    "estimate_tokens",
    "format_context",
    "format_extract",
    "format_search",
]

DEFAULT_CONTEXT_MAX_TOKENS = 4000
"""The budget of ``tavily_context`` when ``max_tokens`` is omitted (tavily-python's own default)."""

NO_SEARCH_RESULTS = "検索結果が見つかりませんでした。"
ALL_URLS_FAILED = "すべてのURLからコンテンツを抽出できませんでした。"
_SEPARATOR = "\n\n---\n\n"


def format_search(query: str, results: Sequence[SearchResult]) -> str:
    """Section 2.4: the numbered results, or the no-results text."""
    header = f"## 検索結果: {query}"
    if not results:
        return f"{header}\n\n{NO_SEARCH_RESULTS}"
    blocks = [
        f"### {number}. {result.title}\nURL: {result.url}\nスコア: {result.score:.2f}\n{result.content}"
        for number, result in enumerate(results, start=1)
    ]
    return "\n\n".join([header, *blocks])


def format_extract(results: Sequence[ExtractResult], failed: Sequence[ExtractFailure]) -> str:
    """Section 3.4: one section per extracted URL separated by ``---``, then the failed URLs if any."""
    header = "## コンテンツ抽出結果"
    failed_section = "## 失敗したURL\n" + "\n".join(f"- {failure.url}: {failure.error}" for failure in failed)
    if not results:
        return f"{header}\n\n{ALL_URLS_FAILED}\n\n{failed_section}"
    sections = [f"### URL: {result.url}\n{result.raw_content}" for result in results]
    if failed:
        sections.append(failed_section)
    return f"{header}\n\n{_SEPARATOR.join(sections)}"


def format_context(query: str, context: str) -> str:
    """Section 4.4."""
    return f"## RAG用検索コンテキスト: {query}\n\n{context}"


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: four ASCII characters per token, one token per other character.

    English averages about four characters per token; Japanese and other non-ASCII text is closer to one or
    more tokens per character, so counting those one by one keeps the estimate from undershooting.
    """
    ascii_chars = sum(1 for char in text if char.isascii())
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def _dump(items: list[dict[str, str]]) -> str:
    return json.dumps(items, ensure_ascii=False)


def build_context(results: Sequence[SearchResult], max_tokens: int) -> str:
    """The RAG context: a JSON list of ``{"url", "content"}`` sources, as many as fit ``max_tokens``.

    Sources are taken in result order while the whole JSON text stays within the estimated budget. When not
    even the first source fits, its content is cut to fit, so a small budget still yields some context. No
    results give ``[]``.
    """
    items: list[dict[str, str]] = []
    for result in results:
        candidate = [*items, {"url": result.url, "content": result.content}]
        if estimate_tokens(_dump(candidate)) > max_tokens:
            break
        items = candidate
    if items or not results:
        return _dump(items)
    first = results[0]
    low, high = 0, len(first.content)
    while low < high:  # the longest prefix of the content that fits
        middle = (low + high + 1) // 2
        if estimate_tokens(_dump([{"url": first.url, "content": first.content[:middle]}])) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    if low == 0 and estimate_tokens(_dump([{"url": first.url, "content": ""}])) > max_tokens:
        return "[]"
    return _dump([{"url": first.url, "content": first.content[:low]}])
