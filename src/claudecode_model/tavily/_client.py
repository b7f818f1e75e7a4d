"""``TavilySearchClient``: tavily-python's async client with key check, timeouts, retries, typed errors."""

from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Any, Self

import httpx
from tavily import AsyncTavilyClient
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from claudecode_model.tavily._deps import TAVILY_API_KEY_ENV, TavilySearchDeps
from claudecode_model.tavily._errors import TavilyAPIError, TavilyErrorType, map_exception
from claudecode_model.tavily._models import ExtractResponse, SearchResponse, parse_extract, parse_search
from claudecode_model.tavily._validation import SearchDepth

if TYPE_CHECKING:
    import ssl
    from collections.abc import Awaitable, Callable
    from types import TracebackType

__all__ = ["TavilySearchClient"]

logger = logging.getLogger(__name__)


class TavilySearchClient:
    """An async Tavily client built from :class:`TavilySearchDeps`.

    - Fails with ``AUTH_ERROR`` at construction when there is no API key (tavily-python 0.8 would silently
      switch to its anonymous mode instead).
    - Passes ``deps.timeout`` on every request.
    - Retries rate limits (429), server errors (5xx) and timeouts up to ``deps.max_retries`` times, waiting
      ``deps.retry_delays()`` in between; other errors are reported at once.
    - Raises :class:`TavilyAPIError` for every failure, never tavily-python's or httpx's exceptions.

    Use it as an async context manager, or call :meth:`aclose`; an injected ``deps.http_client`` is left open.
    """

    def __init__(self, deps: TavilySearchDeps) -> None:
        api_key = deps.resolve_api_key()
        if api_key is None:
            raise TavilyAPIError(
                TavilyErrorType.AUTH_ERROR,
                f"no Tavily API key: pass TavilySearchDeps(api_key=...) or set {TAVILY_API_KEY_ENV}",
            )
        self._deps = deps
        self._api_key = api_key
        self._owned_http_client = deps.http_client is None
        http_client = deps.http_client or _new_http_client(deps.api_base_url)
        self._client = AsyncTavilyClient(api_key=api_key, api_base_url=deps.api_base_url, client=http_client)
        self._http_client = http_client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client this object created (an injected one stays open)."""
        if self._owned_http_client:
            await self._http_client.aclose()

    async def search(self, query: str, *, search_depth: SearchDepth = "basic", max_results: int = 5) -> SearchResponse:
        """Run ``/search``."""
        raw = await self._call(
            "search",
            lambda: self._client.search(
                query, search_depth=search_depth, max_results=max_results, timeout=self._deps.timeout
            ),
        )
        return parse_search(raw, query)

    async def extract(self, urls: list[str]) -> ExtractResponse:
        """Run ``/extract`` for ``urls``."""
        raw = await self._call("extract", lambda: self._client.extract(urls, timeout=self._deps.timeout))
        return parse_extract(raw)

    async def _call(self, operation: str, request: Callable[[], Awaitable[Any]]) -> Any:
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            try:
                return await request()
            except Exception as exc:
                error = map_exception(exc, api_key=self._api_key, attempts=attempts)
                if error is None:
                    raise
                raise error from exc

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._deps.max_retries + 1),
            wait=wait_exponential(multiplier=self._deps.backoff_base, exp_base=self._deps.backoff_factor),
            retry=retry_if_exception(lambda exc: isinstance(exc, TavilyAPIError) and exc.retryable),
            before_sleep=lambda state: _log_retry(operation, state, self._deps.max_retries + 1),
            reraise=True,
        )
        try:
            return await retrying(attempt)
        except TavilyAPIError as error:
            if error.retryable and attempts > 1:
                raise TavilyAPIError(
                    error.error_type,
                    f"{error.message} (gave up after {attempts} attempts)",
                    status_code=error.status_code,
                    attempts=attempts,
                ) from error.__cause__
            raise


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes ~0.1 s; one context serves every client.
    return httpx.create_ssl_context()


def _new_http_client(base_url: str) -> httpx.AsyncClient:
    """The client tavily-python would create (honouring TAVILY_HTTP(S)_PROXY), with the shared SSL context."""
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        scheme: httpx.AsyncHTTPTransport(proxy=proxy, verify=_ssl_context())
        for scheme, variable in (("http://", "TAVILY_HTTP_PROXY"), ("https://", "TAVILY_HTTPS_PROXY"))
        if (proxy := os.environ.get(variable))
    }
    return httpx.AsyncClient(base_url=base_url, verify=_ssl_context(), mounts=mounts or None)


def _log_retry(operation: str, state: RetryCallState, max_attempts: int) -> None:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    error_type = error.error_type if isinstance(error, TavilyAPIError) else type(error).__name__
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    logger.warning(
        "tavily %s: %s on attempt %d/%d, retrying in %.3g s",
        operation,
        error_type,
        state.attempt_number,
        max_attempts,
        delay,
        extra={
            "tavily_operation": operation,
            "tavily_error_type": str(error_type),
            "attempt": state.attempt_number,
            "retry_delay_s": delay,
        },
    )
