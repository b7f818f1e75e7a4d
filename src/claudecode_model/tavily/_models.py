"""Typed views of Tavily's responses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ExtractFailure",
    "ExtractResponse",
    "ExtractResult",
    "SearchDepth",
    "SearchResponse",
    "SearchResult",
]

SearchDepth = Literal["basic", "advanced"]
"""The search depths the tools offer."""


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
