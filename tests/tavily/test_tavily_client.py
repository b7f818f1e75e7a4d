"""TavilySearchClient against the local Tavily stand-in: requests, retries, timeouts and error mapping."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import httpx
import pytest

from claudecode_model.tavily import (
    ExtractFailure,
    ExtractResult,
    SearchResult,
    TavilyAPIError,
    TavilyErrorType,
    TavilySearchClient,
    TavilySearchDeps,
)

if TYPE_CHECKING:
    from claudecode_model.tavily.testing import FakeTavilyServer


async def search(deps: TavilySearchDeps, query: str = "pydantic ai", **kwargs: object) -> list[SearchResult]:
    async with TavilySearchClient(deps) as client:
        response = await client.search(query, **kwargs)  # type: ignore[arg-type]
    return response.results


async def search_error(deps: TavilySearchDeps) -> TavilyAPIError:
    with pytest.raises(TavilyAPIError) as caught:
        await search(deps)
    return caught.value


async def error_without_retry(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, status: int | None = None, detail: str = ""
) -> TavilyAPIError:
    """The error of a search the API answers with ``status`` (``None``: as it is), checking it was not retried."""
    if status is not None:
        fake_tavily.inject("/search", status=status, detail=detail)
    error = await search_error(deps)
    assert len(fake_tavily.requests) == 1
    return error


# --- requests


async def test_search_sends_the_arguments_and_the_key(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    results = await search(deps, "pydantic ai", search_depth="advanced", max_results=3)
    assert [result.url for result in results] == [f"https://example.com/pydantic-ai/{n}" for n in (1, 2, 3)]
    assert results[0] == SearchResult(
        title="pydantic ai - source 1",
        url="https://example.com/pydantic-ai/1",
        content="Summary 1 about pydantic ai.",
        score=0.95,
    )
    [request] = fake_tavily.requests_to("/search")
    assert request.body["query"] == "pydantic ai"
    assert request.body["search_depth"] == "advanced"
    assert request.body["max_results"] == 3
    assert request.authorization == f"Bearer {fake_tavily.api_key}"


async def test_extract_returns_results_and_failures(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.reset(pages={"https://a.example": "A page"}, failing_urls={"https://b.example": "404"})
    async with TavilySearchClient(deps) as client:
        response = await client.extract(["https://a.example", "https://b.example"])
    [request] = fake_tavily.requests_to("/extract")
    assert response.results == [ExtractResult("https://a.example", "A page")]
    assert response.failed_results == [ExtractFailure("https://b.example", "404")]
    assert request.body["urls"] == ["https://a.example", "https://b.example"]
    assert request.body["timeout"] == deps.timeout


async def test_api_key_from_the_environment(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fake_tavily.api_key is not None
    monkeypatch.setenv("TAVILY_API_KEY", fake_tavily.api_key)
    assert len(await search(replace(deps, api_key=None))) == 5
    assert fake_tavily.requests[0].authorization == f"Bearer {fake_tavily.api_key}"


@pytest.mark.parametrize("api_key", [None, ""])
async def test_missing_key_fails_before_any_request(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, api_key: str | None
) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        TavilySearchClient(replace(deps, api_key=api_key))
    assert caught.value.error_type is TavilyErrorType.AUTH_ERROR
    assert "TAVILY_API_KEY" in caught.value.message
    assert caught.value.attempts == 0
    assert fake_tavily.requests == []


async def test_injected_http_client_is_used_and_left_open(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request.url.path)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http_client:
        client_deps = replace(deps, http_client=http_client)
        await search(client_deps)
        await search(client_deps)
        assert not http_client.is_closed
    assert seen == ["/search", "/search"]
    assert len(fake_tavily.requests) == 2


# --- errors that are reported at once


async def test_401_is_an_auth_error_without_retry(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    error = await error_without_retry(fake_tavily, replace(deps, api_key="tvly-wrong"))
    assert error.error_type is TavilyErrorType.AUTH_ERROR
    assert error.status_code == 401
    assert "Unauthorized" in error.message


async def test_400_is_a_validation_error_without_retry(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    error = await error_without_retry(fake_tavily, deps, 400, "Invalid topic.")
    assert error.error_type is TavilyErrorType.VALIDATION_ERROR
    assert error.message == "the API rejected the request (HTTP 400): Invalid topic."


@pytest.mark.parametrize("status", [403, 432, 433])
async def test_403_432_433_are_forbidden_without_retry(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, status: int
) -> None:
    error = await error_without_retry(fake_tavily, deps, status, "Plan limit exceeded.")
    assert error.error_type is TavilyErrorType.FORBIDDEN_ERROR
    assert "Plan limit exceeded." in error.message


async def test_other_4xx_is_unknown_without_retry(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    error = await error_without_retry(fake_tavily, deps, 404, "Not here.")
    assert error.error_type is TavilyErrorType.UNKNOWN_ERROR
    assert error.status_code == 404
    assert error.message.startswith("HTTP 404 from /search")


async def test_refused_connection_is_a_network_error_without_retry(deps: TavilySearchDeps, refusing_port: int) -> None:
    error = await search_error(replace(deps, api_base_url=f"http://127.0.0.1:{refusing_port}"))
    assert error.error_type is TavilyErrorType.NETWORK_ERROR
    assert "ConnectError" in error.message
    assert error.attempts == 1


async def test_unreadable_response_is_unknown(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=200, raw_body="<html>not json</html>")
    error = await search_error(deps)
    assert error.error_type is TavilyErrorType.UNKNOWN_ERROR
    assert "unreadable response" in error.message
    assert len(fake_tavily.requests) == 1


# --- retries


async def test_429_is_retried_then_succeeds(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    fake_tavily.inject("/search", status=429, times=2)
    with caplog.at_level(logging.WARNING, logger="claudecode_model.tavily"):
        results = await search(deps)
    assert len(results) == 5
    assert len(fake_tavily.requests) == 3
    delays = [record.retry_delay_s for record in caplog.records if hasattr(record, "retry_delay_s")]
    assert delays == pytest.approx([0.001, 0.002])


async def test_429_retried_up_to_max_retries_then_reported(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    fake_tavily.inject("/search", status=429, times=10, detail="Too many requests.")
    with caplog.at_level(logging.WARNING, logger="claudecode_model.tavily"):
        error = await search_error(deps)
    assert error.error_type is TavilyErrorType.RATE_LIMIT_ERROR
    assert error.attempts == 4  # max_retries=3 retries after the first attempt
    assert error.message == "rate limit exceeded (HTTP 429): Too many requests. (gave up after 4 attempts)"
    assert len(fake_tavily.requests) == 4
    delays = [record.retry_delay_s for record in caplog.records if hasattr(record, "retry_delay_s")]
    assert delays == pytest.approx(deps.retry_delays())
    assert deps.retry_delays() == pytest.approx([0.001, 0.002, 0.004])


async def test_max_retries_zero_means_one_attempt(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=429, times=10)
    error = await search_error(replace(deps, max_retries=0))
    assert error.error_type is TavilyErrorType.RATE_LIMIT_ERROR
    assert error.attempts == 1
    assert "gave up" not in error.message
    assert len(fake_tavily.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retried_then_reported(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, status: int) -> None:
    fake_tavily.inject("/search", status=status, times=10, detail="Internal error.")
    error = await search_error(replace(deps, max_retries=2))
    assert error.error_type is TavilyErrorType.SERVER_ERROR
    assert error.status_code == status
    assert f"HTTP {status} from /search" in error.message
    assert len(fake_tavily.requests) == 3


async def test_5xx_once_then_success(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=503)
    assert len(await search(deps)) == 5
    assert len(fake_tavily.requests) == 2


async def test_timeout_is_passed_on_every_call_and_retried(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    fake_tavily.inject("/search", delay=30, times=2)
    error = await search_error(replace(deps, timeout=0.2, max_retries=1))
    assert error.error_type is TavilyErrorType.TIMEOUT_ERROR
    assert "timed out after 0.2 seconds" in error.message
    assert error.attempts == 2
    assert len(fake_tavily.requests) == 2


async def test_extract_timeout(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/extract", delay=30)
    async with TavilySearchClient(replace(deps, timeout=0.2, max_retries=0)) as client:
        with pytest.raises(TavilyAPIError) as caught:
            await client.extract(["https://a.example"])
    assert caught.value.error_type is TavilyErrorType.TIMEOUT_ERROR
    assert fake_tavily.requests_to("/extract")[0].body["timeout"] == 0.2


async def test_slow_answer_within_the_timeout_succeeds(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", delay=0.05)
    assert len(await search(deps)) == 5


# --- the API key stays secret


async def test_key_echoed_by_the_server_is_masked(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    assert deps.api_key is not None
    fake_tavily.inject("/search", status=401, detail=f"Key {deps.api_key} is revoked.")
    with caplog.at_level(logging.DEBUG):
        error = await search_error(deps)
    assert deps.api_key not in str(error)
    assert "Key *** is revoked." in error.message
    assert all(deps.api_key not in record.getMessage() for record in caplog.records)


def test_deps_repr_hides_the_key() -> None:
    deps = TavilySearchDeps(api_key="tvly-secret-123")
    assert "tvly-secret-123" not in repr(deps)


# --- settings


def test_default_backoff_is_one_two_four_seconds() -> None:
    assert TavilySearchDeps().retry_delays() == [1.0, 2.0, 4.0]
    assert TavilySearchDeps(max_retries=0).retry_delays() == []


@pytest.mark.parametrize(
    "settings",
    [
        {"timeout": 0},
        {"timeout": float("inf")},
        {"max_retries": -1},
        {"backoff_base": -1},
        {"backoff_factor": 0.5},
        {"api_base_url": "api.tavily.com"},
    ],
)
def test_invalid_settings_are_rejected(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        TavilySearchDeps(**settings)  # type: ignore[arg-type]


def test_errors_survive_pickling() -> None:
    import pickle

    error = TavilyAPIError(TavilyErrorType.SERVER_ERROR, "boom", status_code=502, attempts=4)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.error_type, copy.message, copy.status_code, copy.attempts, str(copy)) == (
        error.error_type,
        error.message,
        502,
        4,
        str(error),
    )


async def test_malformed_results_are_unknown(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=200, raw_body='{"results": [1, 2]}')
    error = await search_error(deps)
    assert error.error_type is TavilyErrorType.UNKNOWN_ERROR
    assert error.message == "unexpected search response from the API: a result is not an object"


async def test_cancellation_propagates_and_closes_the_connection(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    fake_tavily.inject("/search", delay=600)
    task = asyncio.create_task(search(deps))
    while not fake_tavily.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(fake_tavily.requests) == 1  # not retried


async def test_tavily_proxy_variable_is_honoured(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stand-in plays the proxy: it receives the absolute-form request and answers 404 for the unknown
    # path, whereas without the proxy the unresolvable host would be a network error.
    monkeypatch.setenv("TAVILY_HTTP_PROXY", fake_tavily.base_url)
    error = await search_error(replace(deps, api_base_url="http://tavily.invalid", max_retries=0))
    assert error.error_type is TavilyErrorType.UNKNOWN_ERROR
    assert error.status_code == 404


def test_retryable_error_types() -> None:
    assert {error_type for error_type in TavilyErrorType if TavilyAPIError(error_type, "x").retryable} == {
        TavilyErrorType.RATE_LIMIT_ERROR,
        TavilyErrorType.SERVER_ERROR,
        TavilyErrorType.TIMEOUT_ERROR,
    }
