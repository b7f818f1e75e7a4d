"""The contract's validation rules for the tool arguments.

Every violation raises :class:`TavilyAPIError` with ``VALIDATION_ERROR`` before any request is made, except
for individual malformed URLs in ``tavily_extract``, which are recorded as failed while the valid ones go
ahead.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from claudecode_model.tavily._errors import TavilyAPIError, TavilyErrorType
from claudecode_model.tavily._models import ExtractFailure

__all__ = [
    "MAX_QUERY_LENGTH",
    "MAX_RESULTS_LIMIT",
    "MAX_URLS",
    "SEARCH_DEPTHS",
    "SearchDepth",
    "UrlCheck",
    "check_urls",
    "validate_max_results",
    "validate_max_tokens",
    "validate_query",
    "validate_search_depth",
]

logger = logging.getLogger(__name__)

MAX_QUERY_LENGTH = 1000
MAX_RESULTS_LIMIT = 20
MAX_URLS = 20
SearchDepth = Literal["basic", "advanced"]
"""The search depths the tools offer."""
SEARCH_DEPTHS: tuple[SearchDepth, ...] = ("basic", "advanced")

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_DNS_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")


def _invalid(message: str) -> TavilyAPIError:
    return TavilyAPIError(TavilyErrorType.VALIDATION_ERROR, message)


def validate_query(query: object) -> str:
    """The query without surrounding whitespace; it must be a non-blank string of at most 1000 characters."""
    if not isinstance(query, str):
        raise _invalid(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise _invalid("query must not be empty or whitespace only")
    if len(query) > MAX_QUERY_LENGTH:
        raise _invalid(f"query is too long: {len(query)} characters (at most {MAX_QUERY_LENGTH})")
    return query.strip()


def validate_search_depth(search_depth: object) -> SearchDepth:
    """``search_depth`` must be ``"basic"`` or ``"advanced"``."""
    if search_depth not in SEARCH_DEPTHS:
        raise _invalid(f"search_depth must be 'basic' or 'advanced', got {search_depth!r}")
    return search_depth


def validate_max_results(max_results: object) -> int:
    """``max_results`` must be an integer from 1 to 20."""
    if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= MAX_RESULTS_LIMIT:
        raise _invalid(f"max_results must be an integer from 1 to {MAX_RESULTS_LIMIT}, got {max_results!r}")
    return max_results


def validate_max_tokens(max_tokens: object) -> int | None:
    """``max_tokens`` must be ``None`` or an integer >= 1."""
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _invalid(f"max_tokens must be an integer >= 1 or null, got {max_tokens!r}")
    return max_tokens


@dataclass(frozen=True)
class UrlCheck:
    """The outcome of :func:`check_urls`: the URLs to send, in order, and those rejected with their reason."""

    valid: list[str]
    invalid: list[ExtractFailure]


def check_urls(urls: object) -> UrlCheck:
    """Apply the contract's URL table.

    An empty list or more than 20 entries raises ``VALIDATION_ERROR``. Each URL is stripped; duplicates are
    merged keeping the first occurrence; a URL without an ``http``/``https`` scheme or without a valid host is
    rejected with a reason; an ``http://`` URL is accepted with a warning in the log.
    """
    if not isinstance(urls, list | tuple):
        raise _invalid("urls must be a list of URL strings")
    entries: list[str] = []
    for url in urls:
        if not isinstance(url, str):
            raise _invalid("urls must be a list of URL strings")
        entries.append(url)
    if not entries:
        raise _invalid("urls must contain at least one URL")
    if len(entries) > MAX_URLS:
        raise _invalid(f"too many URLs: {len(entries)} (at most {MAX_URLS} per call)")
    valid: list[str] = []
    invalid: list[ExtractFailure] = []
    seen: set[str] = set()
    for raw in entries:
        url = raw.strip()
        if url in seen:
            continue
        seen.add(url)
        reason = url_problem(url)
        if reason is not None:
            invalid.append(ExtractFailure(url=url, error=reason))
            continue
        if url[:7].lower() == "http://":
            logger.warning("tavily_extract: %s uses http://; https:// is recommended", url)
        valid.append(url)
    return UrlCheck(valid=valid, invalid=invalid)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be extracted, or ``None`` if it is a valid http(s) URL."""
    if not url:
        return "empty URL"
    if any(char.isspace() for char in url):
        return "invalid URL: contains whitespace"
    if not _SCHEME.match(url):
        return "invalid URL: missing scheme (http:// or https:// required)"
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError as exc:
        return f"invalid URL: {exc}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"invalid URL: unsupported scheme {parts.scheme!r} (http:// or https:// required)"
    host = parts.hostname
    if not host:
        return "invalid URL: missing host name"
    if not _valid_host(host):
        return f"invalid URL: invalid host name {host!r}"
    return None


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    labels = ascii_host.removesuffix(".").split(".")
    return len(ascii_host) <= 253 and all(_DNS_LABEL.match(label) for label in labels)
