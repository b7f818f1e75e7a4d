"""``TavilySearchDeps``: the dependencies of the Tavily tools (API key and client settings)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import httpx

__all__ = ["DEFAULT_API_BASE_URL", "TAVILY_API_KEY_ENV", "TavilySearchDeps"]

TAVILY_API_KEY_ENV = "TAVILY_API_KEY"
"""The environment variable the API key is read from when ``TavilySearchDeps.api_key`` is not given."""

DEFAULT_API_BASE_URL = "https://api.tavily.com"


@dataclass
class TavilySearchDeps:
    """Settings of the Tavily tools, passed as the agent's ``deps`` or to ``TavilyToolset(deps=...)``.

    Attributes:
        api_key: The Tavily API key. When ``None`` (or empty), ``TAVILY_API_KEY`` is read at call time; if
            neither is set, every tool call fails with ``AUTH_ERROR`` before any request is made. Never
            shown in ``repr``.
        api_base_url: Where the API lives (point it at ``claudecode_model.tavily.testing.FakeTavilyServer`` in
            tests). Ignored when ``http_client`` already has a ``base_url`` of its own.
        timeout: Seconds one HTTP request may take; passed on every call (tavily-python caps search at 120 s).
        max_retries: How many times a failed call is *retried* (not counting the first attempt) when the API
            answered 429 or 5xx or the request timed out. The default 3 means up to 4 requests.
        backoff_base: Seconds to wait before the first retry.
        backoff_factor: Each further retry waits this many times longer than the previous one. With the
            defaults the waits are 1 s, 2 s, 4 s.
        http_client: An ``httpx.AsyncClient`` to send the requests with (custom transport, proxy, pooling).
            The caller owns it and closes it; tavily-python adds its ``Authorization`` and ``Content-Type``
            headers to it when they are not set yet. When ``None``, a client is created and closed for
            every tool call.
    """

    api_key: str | None = field(default=None, repr=False)
    api_base_url: str = DEFAULT_API_BASE_URL
    timeout: float = 60.0
    max_retries: int = 3
    backoff_base: float = 1.0
    backoff_factor: float = 2.0
    http_client: httpx.AsyncClient | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        if not (math.isfinite(self.backoff_base) and self.backoff_base >= 0):
            raise ValueError(f"backoff_base must be a number of seconds >= 0, got {self.backoff_base!r}")
        if not (math.isfinite(self.backoff_factor) and self.backoff_factor >= 1):
            raise ValueError(f"backoff_factor must be >= 1, got {self.backoff_factor!r}")
        if not self.api_base_url.startswith(("http://", "https://")):
            raise ValueError(f"api_base_url must be an http(s) URL, got {self.api_base_url!r}")

    def resolve_api_key(self) -> str | None:
        """The API key to use: ``api_key`` if set, else ``TAVILY_API_KEY``, else ``None``."""
        return self.api_key or os.environ.get(TAVILY_API_KEY_ENV) or None

    def retry_delays(self) -> list[float]:
        """The wait before each retry, in seconds: ``backoff_base * backoff_factor ** n``, n < max_retries."""
        return [self.backoff_base * self.backoff_factor**n for n in range(self.max_retries)]
