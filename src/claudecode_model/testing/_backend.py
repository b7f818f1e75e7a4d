"""``OfflineBackend``: a local Anthropic Messages API server whose answers come from a pydantic-ai brain."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import shutil
import socket
import tempfile
import threading
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from claudecode_model.ipc._leftovers import directory_prefix, hold_owner_lock, release_owner_lock, remove_dead_leftovers

from ._brain import Brain, BrainAnswer, BrainSpec, ScriptBrain, ScriptExhaustedError, make_brain
from ._cache import PromptCache, shared_prompt_cache
from ._env import quiet_cli_env
from ._request import RecordedRequest, parse_request
from ._script import Failure, error_type_for_status
from ._sse import (
    SSEEvent,
    Usage,
    estimate_tokens,
    message_json,
    message_start,
    new_message_id,
    request_text,
    stream_events,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine, Mapping
    from types import TracebackType

    from pydantic_ai.models.function import StreamFunctionDef
    from starlette.requests import Request

__all__ = ["OfflineBackend"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

DEFAULT_MODEL = "claude-opus-5-5"
"""The offline backend's model: the bundled CLI's own default, so that naming no model changes nothing else."""

_START_TIMEOUT = 10.0
_DIR_PREFIXES = ("claudecode-offline-config-", "claudecode-offline-tmp-")
"""The backend's two temp dirs (the CLI's config dir and temp dir), named with their owner's pid: those of a program
that died without removing them (SIGKILL, an unhandled SIGTERM) are removed when another backend starts."""
_STOP_TIMEOUT = 10.0
_HOLD_POLL_SECONDS = 0.005
_CUT_PAUSE_SECONDS = 0.5


@dataclass(frozen=True)
class _Hold:
    """A pause of one streamed answer: after this many content deltas, until the gate is set."""

    after_deltas: int
    gate: threading.Event


class _NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with TCP_NODELAY set on every accepted socket (records what it saw)."""

    nodelay_flags: ClassVar[list[bool]]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.nodelay_flags.append(bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)))
        super().connection_made(transport)


class _Stopped(Exception):
    """The backend stopped before the brain answered."""


class _Server(uvicorn.Server):
    """uvicorn's server that reports when it accepts connections."""

    def __init__(self, config: uvicorn.Config, started: threading.Event) -> None:
        super().__init__(config)
        self.started_event = started
        self.exit_requested = asyncio.Event()  # set (thread-safely) by OfflineBackend.stop()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.started_event.set()

    async def main_loop(self) -> None:
        # uvicorn polls ``should_exit`` every 0.1 s; waking on an event makes stop() prompt.
        while not self.should_exit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exit_requested.wait(), 1.0)
            await self.on_tick(0)  # refreshes the Date header
            if self.exit_requested.is_set():
                self.should_exit = True


def _private_dirs() -> tuple[list[Path], list[int | None]]:
    """The backend's temp dirs, each held with an owner lock (so that a sweep in another PID namespace leaves them),
    after the dirs of dead owners are removed."""
    base = tempfile.gettempdir()
    directories: list[Path] = []
    for prefix in _DIR_PREFIXES:
        remove_dead_leftovers(base, prefix)
        directories.append(Path(tempfile.mkdtemp(prefix=directory_prefix(prefix), dir=base)))
    return directories, [hold_owner_lock(directory) for directory in directories]


def _remove_dirs(directories: list[Path], locks: list[int | None]) -> None:
    for lock in locks:
        release_owner_lock(lock)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


def _error_response(
    status: int, message: str, error_type: str | None = None, headers: tuple[tuple[str, str], ...] = ()
) -> JSONResponse:
    body = {
        "type": "error",
        "error": {"type": error_type or error_type_for_status(status), "message": message},
    }
    return JSONResponse(body, status_code=status, headers={"request-id": _request_id(), **dict(headers)})


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _request_id() -> str:
    return f"req_offline_{uuid.uuid4().hex[:20]}"


class OfflineBackend:
    """A local Anthropic Messages API server for the Claude Code CLI, answering from a pydantic-ai brain.

    ``brain`` is ``None`` (``TestModel`` behaviour: call every offered tool once, then answer with text), a
    pydantic-ai ``Model``, a ``FunctionModel``-style function ``(messages, info) -> ModelResponse``, a fixed
    reply text, or a list of scripted turns (``ScriptedTurn``, ``ModelResponse``, text, list of parts, or
    ``Failure``) consumed one per request. ``stream_function`` takes a ``FunctionModel`` stream function
    instead.

    ``model_name`` is the model a ``ClaudeCodeModel`` without a name uses through :meth:`cli_env` (so its offline
    cost is that of the same model named explicitly), and the model of answers to requests that name none.
    Token counts are about one per four characters of the request's and the answer's text, unless a scripted turn
    or a brain function sets usage itself.

    ``prompt_cache`` emulates the API's prompt caching (off by default): ``True`` uses one cache for the whole
    process (the API's is shared by every client of an organisation, so a conversation continued by another worker
    finds what the first one cached), a :class:`~claudecode_model.testing.PromptCache` a cache of its own. A request
    then reads the longest prefix cached at its ``cache_control`` breakpoints and writes the prefixes at them; its
    usage splits the input into ``cache_read_input_tokens``, ``cache_creation_input_tokens`` and ``input_tokens``,
    which the CLI prices (reads at a tenth of the input price, writes at 1.25 times) into its ``total_cost_usd``.

    The brain sees the conversation without the CLI's ``<system-reminder>`` texts; ``keep_cli_additions=True`` shows
    it everything the CLI sent, its own additions included (an ``@file`` the CLI expanded, a command's output).
    Either way :meth:`RecordedRequest.cli_additions` names the blocks the CLI added.

    ``context_window`` imitates a model's context window: a request whose input is longer (by the same token count)
    gets the API's ``prompt is too long`` error.

    The server runs on 127.0.0.1 in a background thread with its own event loop; use it as a (sync or async)
    context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        brain: BrainSpec = None,
        *,
        stream_function: StreamFunctionDef | None = None,
        text_chunk_size: int = 8,
        delta_delay: float = 0.0,
        model_name: str = DEFAULT_MODEL,
        port: int = 0,
        prompt_cache: bool | PromptCache = False,
        keep_cli_additions: bool = False,
        context_window: int | None = None,
    ) -> None:
        if text_chunk_size < 1:
            raise ValueError("text_chunk_size must be at least 1")
        if delta_delay < 0:
            raise ValueError("delta_delay must not be negative")
        self._brain: Brain = make_brain(brain, stream_function)
        self.text_chunk_size = text_chunk_size
        self.delta_delay = delta_delay
        self.model_name = model_name
        self.keep_cli_additions = keep_cli_additions
        self.context_window = context_window
        """The most input tokens a request may have (``None``: no limit); a longer one is refused as the API refuses
        it (400, ``prompt is too long: N tokens > M maximum``), and recorded."""
        self.answer_headers: dict[str, str] = {}
        """Headers added to every answer (not to failures), e.g. ``anthropic-ratelimit-unified-*`` headers that
        make Claude Code report a rate-limit state."""
        self._port = port
        match prompt_cache:
            case PromptCache():
                self.prompt_cache: PromptCache | None = prompt_cache
            case True:
                self.prompt_cache = shared_prompt_cache()
            case False:
                self.prompt_cache = None
            case _:
                raise TypeError(f"prompt_cache must be a bool or a PromptCache, not {type(prompt_cache).__name__}")
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: deque[Failure] = deque()
        self._holds: deque[_Hold] = deque()
        self._errors: list[str] = []
        self._nodelay_flags: list[bool] = []
        self._thread: threading.Thread | None = None
        self._server: _Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._url: str | None = None
        self._config_dir: Path | None = None
        self._tmp_dir: Path | None = None
        self._startup_error: BaseException | None = None
        self._dir_finalizer: weakref.finalize[..., OfflineBackend] | None = None

    # --- lifecycle ------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the server is up."""
        return self._thread is not None and self._url is not None

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>`` (only while running)."""
        return _while_running(self._url)

    @property
    def port(self) -> int:
        """The TCP port (only while running)."""
        return int(self.url.rsplit(":", 1)[1])

    def start(self) -> None:
        """Start serving (blocks until the server accepts connections)."""
        if self._thread is not None:
            raise RuntimeError("the offline backend is already running")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(("127.0.0.1", self._port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        protocol = type("_BackendH11Protocol", (_NoDelayH11Protocol,), {"nodelay_flags": self._nodelay_flags})
        config = uvicorn.Config(
            self._app(),
            loop="asyncio",
            http=protocol,
            ws="none",
            lifespan="off",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=1,
            timeout_keep_alive=30,
        )
        started = threading.Event()
        server = _Server(config, started)
        self._server = server
        self._startup_error = None
        directories, locks = _private_dirs()
        self._config_dir, self._tmp_dir = directories
        # Removes the dirs even if stop() is never called (at garbage collection or interpreter exit).
        self._dir_finalizer = weakref.finalize(self, _remove_dirs, directories, locks)
        thread = threading.Thread(target=self._serve, args=(server, sock, started), name="offline-backend", daemon=True)
        self._thread = thread
        thread.start()
        if not started.wait(_START_TIMEOUT) or not server.started:
            server.should_exit = True
            thread.join(_STOP_TIMEOUT)
            sock.close()
            self._cleanup()
            raise RuntimeError(f"the offline backend failed to start: {self._startup_error!r}")
        port = sock.getsockname()[1]
        self._url = f"http://127.0.0.1:{port}"
        logger.debug("offline backend listening on %s", self._url)

    def _serve(self, server: _Server, sock: socket.socket, started: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()

            await server.serve(sockets=[sock])

        try:
            asyncio.run(main())
        except BaseException as exc:  # the thread must never die silently
            self._startup_error = exc
            logger.exception("offline backend server thread failed")
        finally:
            started.set()
            sock.close()

    def stop(self) -> None:
        """Stop serving and remove the backend's temp dirs; returns once the thread has ended."""
        thread, server = self._thread, self._server
        if thread is None or server is None:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(server.exit_requested.set)
            except RuntimeError:
                logger.debug("offline backend loop already closed")
        server.should_exit = True
        thread.join(_STOP_TIMEOUT)
        if thread.is_alive():
            server.force_exit = True
            thread.join(_STOP_TIMEOUT)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._dir_finalizer is not None:
            self._dir_finalizer()
            self._dir_finalizer = None
        self._config_dir = self._tmp_dir = None
        self._thread = self._server = None
        self._loop = None
        self._url = None

    def __enter__(self) -> OfflineBackend:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> OfflineBackend:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    # --- configuration --------------------------------------------------------------------------------------

    @property
    def config_dir(self) -> Path:
        """The private CLI config dir this backend owns (only while running)."""
        return _while_running(self._config_dir)

    @property
    def tmp_dir(self) -> Path:
        """The private CLI temp dir this backend owns (only while running)."""
        return _while_running(self._tmp_dir)

    def cli_env(self, config_dir: str | Path | None = None) -> dict[str, str]:
        """The environment that points the CLI at this backend (see :func:`quiet_cli_env`).

        ``config_dir`` defaults to a private dir the backend removes on stop. A model without a name uses the
        backend's ``model_name``, so its offline cost is that of the same model named explicitly.
        """
        config = config_dir if config_dir is not None else self.config_dir
        return quiet_cli_env(self.url, config, self.tmp_dir, model=self.model_name)

    def set_brain(self, brain: BrainSpec = None, *, stream_function: StreamFunctionDef | None = None) -> None:
        """Replace the brain (same forms as the constructor)."""
        self._brain = make_brain(brain, stream_function)

    def fail_next(self, failure: Failure, count: int = 1) -> None:
        """Serve ``failure`` instead of the brain's answer to the next ``count`` ``/v1/messages`` requests."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._failures.extend([failure] * count)

    def hold_next_stream(self, after_deltas: int = 1) -> threading.Event:
        """Pause the next streamed answer after ``after_deltas`` content deltas until the returned event is set.

        A test can then check what the client saw while the response was provably still unfinished. Stopping
        the backend, or the client going away, also ends the pause.
        """
        if after_deltas < 0:
            raise ValueError("after_deltas must not be negative")
        gate = threading.Event()
        with self._lock:
            self._holds.append(_Hold(after_deltas, gate))
        return gate

    def reset(self) -> None:
        """Forget recorded requests, brain errors, pending failures and pending holds."""
        with self._lock:
            self._requests.clear()
            self._failures.clear()
            self._errors.clear()
            self._holds.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """The recorded ``/v1/messages`` requests, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        """Brain failures (exceptions, exhausted script) that were served as HTTP 500, in order (a copy)."""
        with self._lock:
            return list(self._errors)

    @property
    def script_remaining(self) -> int | None:
        """How many scripted turns are left (None when the brain is not a script)."""
        brain = self._brain
        return brain.remaining if isinstance(brain, ScriptBrain) else None

    @property
    def last_request(self) -> RecordedRequest:
        """The latest recorded request (IndexError if none)."""
        with self._lock:
            return self._requests[-1]

    # --- HTTP -----------------------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        async def not_found(request: Request, exc: Exception) -> Response:
            status = exc.status_code if isinstance(exc, HTTPException) else 404
            return _error_response(status, f"offline backend: {request.method} {request.url.path} is not served")

        return Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/", self._hello, methods=["GET", "HEAD"]),
                Route("/api/hello", self._hello, methods=["GET", "HEAD"]),
            ],
            exception_handlers={404: not_found, 405: not_found},
        )

    async def _hello(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "server": "claudecode-model offline backend"})

    async def _body(self, request: Request) -> dict[str, Any] | Response:
        raw = await request.body()
        try:
            body = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
        except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, NaN, huge numbers, deep nesting
            return _error_response(400, f"offline backend: request body is not valid JSON: {exc}")
        if not isinstance(body, dict):
            return _error_response(400, "offline backend: request body must be a JSON object")
        return body

    async def _count_tokens(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        return JSONResponse(
            {"input_tokens": estimate_tokens(request_text(body))}, headers={"request-id": _request_id()}
        )

    async def _messages(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        parsed = parse_request(body)
        record = RecordedRequest(
            raw=body,
            headers={k.lower(): v for k, v in request.headers.items()},
            path=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
            stream=bool(body.get("stream", False)),
            system="\n\n".join(parsed.system_blocks),
            messages=parsed.messages,
            tools=parsed.tools,
            system_blocks=parsed.system_blocks,
        )
        with self._lock:
            self._requests.append(record)
            failure = self._failures.popleft() if self._failures else None
        model = str(body.get("model") or self.model_name)
        if failure is not None:
            return await self._serve_failure(failure, model, record.stream)
        if self.context_window is not None and (tokens := estimate_tokens(request_text(body))) > self.context_window:
            return _error_response(400, f"prompt is too long: {tokens} tokens > {self.context_window} maximum")
        try:
            seen = parse_request(body, keep_cli_additions=True) if self.keep_cli_additions else parsed
            answer = await self._until_stopped(self._brain.answer(seen.messages, seen.tools))
        except _Stopped:
            return _error_response(529, "offline backend: stopped while the brain was answering")
        except ScriptExhaustedError as exc:
            return self._brain_error(str(exc))
        except Exception as exc:
            logger.debug("offline backend brain failed", exc_info=True)
            return self._brain_error(f"offline backend: the brain raised {type(exc).__name__}: {exc}")
        return await self._serve_answer(answer, body, model, record.stream)

    def _brain_error(self, message: str) -> Response:
        logger.error("%s", message)
        with self._lock:
            self._errors.append(message)
        return _error_response(500, message)

    async def _until_stopped(self, answering: Coroutine[Any, Any, BrainAnswer]) -> BrainAnswer:
        """The brain's answer, or :class:`_Stopped` once the backend stops: the brain call is cancelled then, so
        that the server's shutdown finds no request still running (which it would cancel itself, with a traceback
        on stderr)."""
        server = self._server
        task = asyncio.ensure_future(answering)
        if server is None:
            return await task
        stopping = asyncio.ensure_future(server.exit_requested.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            raise _Stopped
        return task.result()

    async def _wait(self, seconds: float | None) -> None:
        """Sleep ``seconds`` (forever if None), cut short when the backend stops."""
        server = self._server
        if server is None:
            return
        try:
            await asyncio.wait_for(server.exit_requested.wait(), seconds)
        except TimeoutError:
            return

    async def _serve_answer(self, answer: BrainAnswer, body: dict[str, Any], model: str, stream: bool) -> Response:
        if answer.delay > 0:
            await self._wait(answer.delay)
        if answer.failure is not None:
            return await self._serve_failure(answer.failure, model, stream)
        if answer.response is None:
            return _error_response(500, "offline backend: the brain gave no response")
        message_id = new_message_id()
        cache = self.prompt_cache
        cached = cache.serve(body, estimate_tokens(request_text(body))) if cache is not None else None
        if not stream:
            return JSONResponse(
                message_json(answer.response, message_id=message_id, model=model, request_body=body, cached=cached),
                headers={"request-id": _request_id(), **self.answer_headers},
            )
        events = stream_events(
            answer.response,
            message_id=message_id,
            model=model,
            request_body=body,
            text_chunk_size=self.text_chunk_size,
            cached=cached,
        )
        with self._lock:
            hold = self._holds.popleft() if self._holds else None
        return self._sse_response(self._paced(events, hold), self.answer_headers)

    async def _paced(self, events: list[SSEEvent], hold: _Hold | None = None) -> AsyncIterator[bytes]:
        deltas = 0
        if hold is not None and hold.after_deltas == 0:
            await self._until(hold.gate)
        for event in events:
            yield event.encode()
            if event.event != "content_block_delta":
                continue
            deltas += 1
            if hold is not None and deltas == hold.after_deltas:
                await self._until(hold.gate)
            if self.delta_delay > 0:
                await asyncio.sleep(self.delta_delay)

    async def _until(self, gate: threading.Event) -> None:
        """Wait until ``gate`` is set (set from any thread) or the backend stops."""
        server = self._server
        # Polled: the gate is a threading.Event set from the test's thread, which an asyncio.Event cannot be.
        while not gate.is_set() and server is not None and not server.exit_requested.is_set():  # noqa: ASYNC110
            await asyncio.sleep(_HOLD_POLL_SECONDS)

    def _sse_response(
        self, chunks: AsyncIterator[bytes], extra_headers: Mapping[str, str] | None = None
    ) -> StreamingResponse:
        headers = {"request-id": _request_id(), "cache-control": "no-cache", **(extra_headers or {})}
        return StreamingResponse(chunks, media_type="text/event-stream", headers=headers)

    async def _serve_failure(self, failure: Failure, model: str, stream: bool) -> Response:
        logger.debug("offline backend serving injected failure %s", failure)
        match failure.kind:
            case "http":
                return JSONResponse(
                    failure.error_body(),
                    status_code=failure.status,
                    headers={"request-id": _request_id(), **dict(failure.headers)},
                )
            case "stall":
                await self._wait(failure.seconds)
                return _error_response(failure.status, failure.message, failure.error_type)
            case "sse_error":
                if not stream:
                    status = 529 if failure.error_type == "overloaded_error" else 500
                    return _error_response(status, failure.message, failure.error_type)
                usage = Usage(input_tokens=1, output_tokens=0, cache_creation_input_tokens=0, cache_read_input_tokens=0)
                start = message_start(new_message_id(), model, usage)
                error = SSEEvent("error", failure.error_body())
                return self._sse_response(_once(start.encode() + error.encode()))
            case "malformed_sse":
                if not stream:
                    return Response(b'{"type": "message", "content": [', media_type="application/json")
                garbage = b'event: message_start\ndata: {"type": "message_start", "message": \n\nnot SSE at all\n\n'
                return self._sse_response(_once(garbage))
            case "cut":
                if not stream:
                    return _error_response(failure.status, failure.message, failure.error_type)
                logging.getLogger("uvicorn.error").addFilter(_QUIET_CUTS)  # a filter already there is not added again
                return self._sse_response(self._cut_stream(failure, model))

    async def _cut_stream(self, failure: Failure, model: str) -> AsyncIterator[bytes]:
        """The stream of ``failure.partial`` up to ``failure.after_deltas`` content deltas, then the cut."""
        assert failure.partial is not None
        events = stream_events(
            failure.partial,
            message_id=new_message_id(),
            model=model,
            request_body={},
            text_chunk_size=self.text_chunk_size,
        )
        deltas = 0
        for event in events:
            if event.event == "content_block_delta":
                if deltas == failure.after_deltas:
                    break
                deltas += 1
            elif event.event == "message_delta":
                break
            yield event.encode()
        # The client handles what it received before the cut (a cut that arrives with the data may be seen first).
        await self._wait(_CUT_PAUSE_SECONDS)
        if failure.ending == "sse_error":
            yield SSEEvent("error", failure.error_body()).encode()
            return
        # Ending the response generator with an error makes the server abort the connection mid-body.
        raise _CutConnectionError("offline backend: connection cut on purpose")


class _CutConnectionError(Exception):
    """Raised inside a streamed body to drop the connection (an injected failure, not a bug)."""


class _QuietCuts(logging.Filter):
    """Keeps the server's traceback of an injected connection cut out of the logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _CutConnectionError))


_QUIET_CUTS = _QuietCuts()


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _while_running(value: _T | None) -> _T:
    """A value the backend has only while it runs."""
    if value is None:
        raise RuntimeError("the offline backend is not running; use it as a context manager or call start()")
    return value
