"""``FakeTavilyServer``: a local stand-in for the Tavily API, for tests and offline demos.

A real HTTP server (starlette on uvicorn) on 127.0.0.1 in a background thread, serving ``POST /search`` and
``POST /extract`` the way Tavily does, with canned or generated results, a request log, and failure injection
(any status, slow answers, unreadable bodies). Point the tools at it through
``TavilySearchDeps(api_base_url=...)``::

    with FakeTavilyServer() as server:
        deps = TavilySearchDeps(api_key=server.api_key, api_base_url=server.base_url)
        server.inject("/search", status=429, times=2)  # the next two searches are rate limited
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeAlias

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from types import TracebackType

    from starlette.requests import Request

__all__ = [
    "DEFAULT_FAKE_API_KEY",
    "FakeTavilyServer",
    "Injection",
    "RecordedRequest",
    "SearchResultsSource",
    "generated_search_results",
]

DEFAULT_FAKE_API_KEY = "tvly-fake-0123456789abcdef"
"""The key :class:`FakeTavilyServer` accepts unless told otherwise."""

_STARTUP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RecordedRequest:
    """A request the fake server received (recorded as it arrives, before it is answered)."""

    path: str
    body: Any
    """The parsed JSON body (``None`` if it was not JSON)."""
    authorization: str | None


@dataclass
class Injection:
    """What the next ``times`` requests to one path get instead of a normal answer."""

    status: int | None = None
    """The status to answer with; ``None`` answers normally (after ``delay``)."""
    delay: float = 0.0
    """Seconds to wait before answering (longer than the client's timeout simulates a timeout)."""
    detail: str = ""
    """The error text, sent as Tavily does: ``{"detail": {"error": detail}}``."""
    raw_body: str | None = None
    """A body to send as is instead of JSON."""
    times: int = 1


def generated_search_results(query: str, max_results: int) -> list[dict[str, Any]]:
    """Deterministic results for ``query`` (what the server answers when no results were given)."""
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "query"
    return [
        {
            "title": f"{query} - source {number}",
            "url": f"https://example.com/{slug}/{number}",
            "content": f"Summary {number} about {query}.",
            "score": round(0.95 - 0.1 * (number - 1), 4),
            "raw_content": None,
        }
        for number in range(1, max_results + 1)
    ]


SearchResultsSource: TypeAlias = Sequence[Mapping[str, Any]] | Callable[[str, int], list[dict[str, Any]]] | None
"""Canned search results, a function of (query, max_results) giving them, or ``None`` for generated ones."""


def _search_source(source: SearchResultsSource) -> Callable[[str, int], list[dict[str, Any]]]:
    if source is None:
        return generated_search_results
    if callable(source):
        return source
    canned = [dict(result) for result in source]

    def results(_query: str, max_results: int) -> list[dict[str, Any]]:
        return canned[:max_results]

    return results


@dataclass
class _State:
    api_key: str | None
    search_results: Callable[[str, int], list[dict[str, Any]]]
    pages: dict[str, str]
    failing_urls: dict[str, str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[RecordedRequest] = field(default_factory=list)
    injections: dict[str, deque[Injection]] = field(default_factory=dict)
    sleepers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=set)


class FakeTavilyServer:
    """A local Tavily API on 127.0.0.1; use it as a context manager (or :meth:`start` / :meth:`stop`).

    Args:
        api_key: The key requests must carry (``Authorization: Bearer <key>``), else 401; ``None`` accepts
            any.
        search_results: The results ``/search`` returns (the first ``max_results`` of them); a callable gets
            the query and ``max_results``; ``None`` generates results from the query.
        pages: Content ``/extract`` returns per URL; other URLs get generated content.
        failing_urls: URLs ``/extract`` reports in ``failed_results``, with their error text.
    """

    def __init__(
        self,
        *,
        api_key: str | None = DEFAULT_FAKE_API_KEY,
        search_results: SearchResultsSource = None,
        pages: Mapping[str, str] | None = None,
        failing_urls: Mapping[str, str] | None = None,
    ) -> None:
        self._state = _State(
            api_key=api_key,
            search_results=_search_source(search_results),
            pages=dict(pages or {}),
            failing_urls=dict(failing_urls or {}),
        )
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def api_key(self) -> str | None:
        """The key the server accepts."""
        return self._state.api_key

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (only while running)."""
        if self._port is None:
            raise RuntimeError("FakeTavilyServer is not running")
        return f"http://127.0.0.1:{self._port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._state.lock:
            return list(self._state.requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The requests received on ``path``."""
        return [request for request in self.requests if request.path == path]

    def reset(
        self,
        *,
        search_results: SearchResultsSource = None,
        pages: Mapping[str, str] | None = None,
        failing_urls: Mapping[str, str] | None = None,
    ) -> None:
        """Forget the request log and pending injections, and replace the canned data (same meaning as in
        the constructor), so one running server can serve many tests."""
        with self._state.lock:
            self._state.requests.clear()
            self._state.injections.clear()
            self._state.search_results = _search_source(search_results)
            self._state.pages = dict(pages or {})
            self._state.failing_urls = dict(failing_urls or {})
        _wake_sleepers(self._state)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until no connection is open and no answer is in progress.

        Raises:
            TimeoutError: A client still holds a connection after ``timeout`` seconds (it was never closed).
        """
        server = self._server
        if server is None:
            return
        deadline = time.monotonic() + timeout
        while server.server_state.connections or server.server_state.tasks or self._state.sleepers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"FakeTavilyServer: {len(server.server_state.connections)} connection(s) still open")
            time.sleep(0.005)

    def inject(
        self,
        path: str,
        *,
        status: int | None = None,
        delay: float = 0.0,
        detail: str = "",
        raw_body: str | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` requests to ``path`` answer ``status`` (or normally, after ``delay``)."""
        if times < 1:
            raise ValueError("times must be >= 1")
        injection = Injection(status=status, delay=delay, detail=detail, raw_body=raw_body, times=times)
        with self._state.lock:
            self._state.injections.setdefault(path, deque()).append(injection)

    def start(self) -> Self:
        """Start serving on a free port; returns once the server accepts connections."""
        if self._thread is not None:
            raise RuntimeError("FakeTavilyServer is already running")
        config = uvicorn.Config(
            _build_app(self._state),
            host="127.0.0.1",
            port=0,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="fake-tavily-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + _STARTUP_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                thread.join(timeout=_STARTUP_TIMEOUT_S)
                raise RuntimeError("FakeTavilyServer did not start")
            time.sleep(0.005)
        self._server, self._thread = server, thread
        self._port = server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread to end (slow answers in progress are cut short)."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        _wake_sleepers(self._state)
        server.should_exit = True
        thread.join(timeout=_STARTUP_TIMEOUT_S)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=_STARTUP_TIMEOUT_S)
        self._server = self._thread = None
        self._port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _build_app(state: _State) -> Starlette:
    async def search(request: Request) -> Response:
        return await _serve(state, request, _search_body)

    async def extract(request: Request) -> Response:
        return await _serve(state, request, _extract_body)

    return Starlette(routes=[Route("/search", search, methods=["POST"]), Route("/extract", extract, methods=["POST"])])


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": {"error": detail}}, status_code=status)


async def _serve(state: _State, request: Request, answer: Callable[[_State, dict[str, Any]], JSONResponse]) -> Response:
    path = request.url.path
    try:
        body: Any = json.loads(await request.body())
    except ValueError:
        body = None
    with state.lock:
        state.requests.append(RecordedRequest(path=path, body=body, authorization=request.headers.get("authorization")))
        queue = state.injections.get(path)
        injection = queue[0] if queue else None
        if queue and injection is not None:
            injection.times -= 1
            if injection.times == 0:
                queue.popleft()
    return await _respond(state, request, body, injection, answer)


async def _respond(
    state: _State,
    request: Request,
    body: Any,
    injection: Injection | None,
    answer: Callable[[_State, dict[str, Any]], JSONResponse],
) -> Response:
    if injection is not None:
        await _sleep_unless_woken(state, injection.delay)
        if injection.raw_body is not None:
            return Response(injection.raw_body, status_code=injection.status or 200, media_type="text/plain")
        if injection.status is not None:
            return _error(injection.status, injection.detail)
    if state.api_key is not None and request.headers.get("authorization") != f"Bearer {state.api_key}":
        return _error(401, "Unauthorized: missing or invalid API key.")
    if not isinstance(body, dict):
        return _error(400, "The request body must be a JSON object.")
    return answer(state, body)


async def _sleep_unless_woken(state: _State, seconds: float) -> None:
    """Wait ``seconds``, or less if the server is reset or stopped meanwhile."""
    if seconds <= 0:
        return
    sleeper = (asyncio.get_running_loop(), asyncio.Event())
    with state.lock:
        state.sleepers.add(sleeper)
    try:
        await asyncio.wait_for(sleeper[1].wait(), timeout=seconds)
    except TimeoutError:
        pass
    finally:
        with state.lock:
            state.sleepers.discard(sleeper)


def _wake_sleepers(state: _State) -> None:
    with state.lock:
        sleepers = list(state.sleepers)
    for loop, event in sleepers:
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
            loop.call_soon_threadsafe(event.set)


def _search_body(state: _State, body: dict[str, Any]) -> JSONResponse:
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return _error(400, "Query is missing.")
    max_results = body.get("max_results", 5)
    if not isinstance(max_results, int) or not 0 <= max_results <= 20:
        return _error(400, "max_results must be between 0 and 20.")
    results = state.search_results(query, max_results)
    return JSONResponse(
        {
            "query": query,
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
        }
    )


def _extract_body(state: _State, body: dict[str, Any]) -> JSONResponse:
    urls = body.get("urls")
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list) or not urls or not all(isinstance(url, str) for url in urls):
        return _error(400, "urls must be a non-empty list of URLs.")
    results: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    for url in urls:
        if url in state.failing_urls:
            failed.append({"url": url, "error": state.failing_urls[url]})
        else:
            results.append({"url": url, "raw_content": state.pages.get(url, f"Content of {url}."), "images": []})
    return JSONResponse({"results": results, "failed_results": failed, "response_time": 0.01})
