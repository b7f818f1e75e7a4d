"""Tavily web research tools for pydantic-ai agents (the ``claudecode-model[tavily]`` extra).

- :class:`TavilyToolset`: ``tavily_search``, ``tavily_extract`` and ``tavily_context`` for any agent.
- :class:`TavilySearchDeps`: API key and client settings; :class:`TavilySearchClient`: the client wrapper.
- :class:`TavilyAPIError` / :class:`TavilyErrorType`: what can go wrong.
- :func:`create_research_agent`: a ready research agent (``ClaudeCodeModel`` by default).
- :mod:`claudecode_model.tavily.testing`: a local Tavily stand-in for tests and offline demos.
"""

from __future__ import annotations

try:
    import tavily as _tavily  # noqa: F401
    import tenacity as _tenacity  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"claudecode_model.tavily needs the 'tavily' extra ({_exc.name} is missing): "
        "pip install 'claudecode-model[tavily]'"
    ) from _exc

from claudecode_model.tavily._client import TavilySearchClient
from claudecode_model.tavily._deps import DEFAULT_API_BASE_URL, TAVILY_API_KEY_ENV, TavilySearchDeps
from claudecode_model.tavily._errors import RETRYABLE_ERROR_TYPES, TavilyAPIError, TavilyErrorType
from claudecode_model.tavily._models import (
    ExtractFailure,
    ExtractResponse,
    ExtractResult,
    SearchResponse,
    SearchResult,
)
from claudecode_model.tavily._tools import (
    TOOL_DESCRIPTIONS,
    TavilyDepsResolver,
    TavilyToolset,
    tavily_context,
    tavily_extract,
    tavily_search,
)
from claudecode_model.tavily._validation import SearchDepth
from claudecode_model.tavily.agent import RESEARCH_INSTRUCTIONS, create_research_agent

__all__ = [
    "DEFAULT_API_BASE_URL",
    "RESEARCH_INSTRUCTIONS",
    "RETRYABLE_ERROR_TYPES",
    "TAVILY_API_KEY_ENV",
    "TOOL_DESCRIPTIONS",
    "ExtractFailure",
    "ExtractResponse",
    "ExtractResult",
    "SearchDepth",
    "SearchResponse",
    "SearchResult",
    "TavilyAPIError",
    "TavilyDepsResolver",
    "TavilyErrorType",
    "TavilySearchClient",
    "TavilySearchDeps",
    "TavilyToolset",
    "create_research_agent",
    "tavily_context",
    "tavily_extract",
    "tavily_search",
]
