"""Typed views of Tavily's responses, and their parsing from the API's JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claudecode_model.tavily._errors import TavilyAPIError, TavilyErrorType

__all__ = [
    "ExtractFailure",
    "ExtractResponse",
    "ExtractResult",
    "SearchResponse",
    "SearchResult",
    "parse_extract",
    "parse_search",
]


@dataclass(frozen=True)
class SearchResult:
    """One hit of a search."""

    title: str
    url: str
    content: str
    score: float


@dataclass(frozen=True)
class SearchResponse:
    """What ``/search`` answered."""

    query: str
    results: list[SearchResult]


@dataclass(frozen=True)
class ExtractResult:
    """The content extracted from one URL."""

    url: str
    raw_content: str


@dataclass(frozen=True)
class ExtractFailure:
    """A URL whose content could not be extracted, and why."""

    url: str
    error: str


@dataclass(frozen=True)
class ExtractResponse:
    """What ``/extract`` answered (plus, in the tool, the URLs rejected before the call)."""

    results: list[ExtractResult]
    failed_results: list[ExtractFailure]


def _unexpected(operation: str, detail: str) -> TavilyAPIError:
    return TavilyAPIError(TavilyErrorType.UNKNOWN_ERROR, f"unexpected {operation} response from the API: {detail}")


def _str_field(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def parse_search(raw: Any, query: str) -> SearchResponse:
    """The typed view of what ``/search`` answered for ``query``; :class:`TavilyAPIError` if it is malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("results", []), list):
        raise _unexpected("search", "expected an object with a 'results' list")
    results: list[SearchResult] = []
    for item in raw.get("results", []):
        if not isinstance(item, dict):
            raise _unexpected("search", "a result is not an object")
        score = item.get("score")
        results.append(
            SearchResult(
                title=_str_field(item, "title"),
                url=_str_field(item, "url"),
                content=_str_field(item, "content"),
                score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else 0.0,
            )
        )
    answered_query = raw.get("query")
    return SearchResponse(query=answered_query if isinstance(answered_query, str) else query, results=results)


def parse_extract(raw: Any) -> ExtractResponse:
    """The typed view of what ``/extract`` answered; :class:`TavilyAPIError` if it is malformed."""
    if not isinstance(raw, dict):
        raise _unexpected("extract", "expected an object")
    results_raw = raw.get("results") or []
    failed_raw = raw.get("failed_results") or []
    if not isinstance(results_raw, list) or not isinstance(failed_raw, list):
        raise _unexpected("extract", "'results' and 'failed_results' must be lists")
    results: list[ExtractResult] = []
    failed: list[ExtractFailure] = []
    for item in results_raw:
        if not isinstance(item, dict):
            raise _unexpected("extract", "a result is not an object")
        results.append(ExtractResult(url=_str_field(item, "url"), raw_content=_str_field(item, "raw_content")))
    for item in failed_raw:
        if isinstance(item, dict):
            failed.append(ExtractFailure(url=_str_field(item, "url"), error=_str_field(item, "error") or "failed"))
        elif isinstance(item, str):
            failed.append(ExtractFailure(url=item, error="failed"))
        else:
            raise _unexpected("extract", "a failed result is neither an object nor a URL")
    return ExtractResponse(results=results, failed_results=failed)
