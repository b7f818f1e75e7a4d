"""The offline backend over HTTP: brains, failure injection, routes, lifecycle, leaks, pytest fixtures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel

from claudecode_model.testing import DUMMY_API_KEY, Failure, OfflineBackend, ScriptedTurn, quiet_cli_env

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

TOOLS = [
    {
        "name": "mcp__t__echo",
        "description": "Echo",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
]


def body(text: str = "hi", *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


def sse(response: httpx.Response) -> list[tuple[str, Any]]:
    """Events of an SSE response; data that is not JSON is kept as text."""
    events: list[tuple[str, Any]] = []
    for record in response.text.split("\n\n"):
        if not record.strip():
            continue
        fields = dict(line.split(": ", 1) for line in record.split("\n") if ": " in line)
        try:
            data: Any = json.loads(fields.get("data", ""))
        except json.JSONDecodeError:
            data = fields.get("data")
        events.append((fields.get("event", ""), data))
    return events


def streamed_text(response: httpx.Response) -> str:
    return "".join(
        d["delta"]["text"]
        for e, d in sse(response)
        if e == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )


@pytest.fixture
def backend() -> Iterator[OfflineBackend]:
    with OfflineBackend() as running:
        yield running


@pytest.fixture
def client(backend: OfflineBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.url, timeout=10) as http:
        yield http


def post(client: httpx.Client, payload: dict[str, Any], path: str = "/v1/messages?beta=true") -> httpx.Response:
    return client.post(path, json=payload)


# --- brains -------------------------------------------------------------------------------------------------


def test_default_brain_calls_each_tool_then_answers_with_text(backend: OfflineBackend, client: httpx.Client) -> None:
    first = post(client, body(tools=TOOLS))
    starts = [d["content_block"] for e, d in sse(first) if e == "content_block_start"]
    assert [s["type"] for s in starts] == ["tool_use"]
    assert starts[0]["name"] == "mcp__t__echo"
    partial = "".join(d["delta"]["partial_json"] for e, d in sse(first) if e == "content_block_delta")
    assert isinstance(json.loads(partial)["text"], str)

    tool_id = starts[0]["id"]
    follow_up = body(tools=TOOLS)
    follow_up["messages"] += [
        {"role": "assistant", "content": [{**starts[0], "input": json.loads(partial)}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "echoed"}]},
    ]
    second = post(client, follow_up)
    assert json.loads(streamed_text(second)) == {"mcp__t__echo": "echoed"}
    assert post(client, body()).status_code == 200
    assert streamed_text(post(client, body())) == "success (no tool calls)"


def test_default_brain_uses_the_structured_output_tool_after_other_tools(
    backend: OfflineBackend, client: httpx.Client
) -> None:
    structured = {
        "name": "StructuredOutput",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    }
    only = post(client, body(stream=False, tools=[structured])).json()
    [call] = only["content"]
    assert call["name"] == "StructuredOutput"
    assert isinstance(call["input"]["n"], int)

    first = post(client, body(stream=False, tools=[*TOOLS, structured])).json()
    assert [b["name"] for b in first["content"]] == ["mcp__t__echo"]


def test_function_brain_sees_messages_and_tools(backend: OfflineBackend, client: httpx.Client) -> None:
    seen: list[tuple[list[ModelMessage], list[str]]] = []

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((messages, [t.name for t in info.function_tools]))
        return ModelResponse(parts=[TextPart("from function")])

    backend.set_brain(brain)
    response = post(client, body("question", tools=TOOLS, system="Sys."))
    assert streamed_text(response) == "from function"
    [(messages, tool_names)] = seen
    assert tool_names == ["mcp__t__echo"]
    assert isinstance(messages[-1], ModelRequest)
    assert backend.last_request.last_user_text() == "question"
    assert backend.last_request.system == "Sys."


def test_async_function_and_model_instances_work_as_brains(backend: OfflineBackend, client: httpx.Client) -> None:
    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0)
        return ModelResponse(parts=[TextPart("async reply")])

    backend.set_brain(brain)
    assert streamed_text(post(client, body())) == "async reply"
    backend.set_brain(FunctionModel(brain))
    assert streamed_text(post(client, body())) == "async reply"
    backend.set_brain(TestModel(custom_output_text="custom text"))
    assert streamed_text(post(client, body())) == "custom text"
    backend.set_brain("constant")
    assert streamed_text(post(client, body())) == "constant"


def test_stream_function_brain(backend: OfflineBackend, client: httpx.Client) -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        yield "streamed "
        yield "reply"

    backend.set_brain(stream_function=stream)
    assert streamed_text(post(client, body())) == "streamed reply"
    with pytest.raises(TypeError, match="not both"):
        backend.set_brain("x", stream_function=stream)


def test_script_is_consumed_in_order_and_exhaustion_is_a_500(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.set_brain(
        [
            "plain text",
            ModelResponse(parts=[TextPart("a response")]),
            [ThinkingPart("hmm", signature="s"), "after thinking"],
            ScriptedTurn.tool_call("mcp__t__echo", {"text": "x"}, text="Calling."),
            Failure.http(529, "scripted overload"),
            ScriptedTurn.text("last", delay=0.01),
        ]
    )
    assert backend.script_remaining == 6
    assert streamed_text(post(client, body())) == "plain text"
    assert backend.script_remaining == 5
    assert streamed_text(post(client, body())) == "a response"
    third = sse(post(client, body()))
    assert [d["content_block"]["type"] for e, d in third if e == "content_block_start"] == [
        "thinking",
        "text",
    ]
    fourth = post(client, body(stream=False)).json()
    assert [b["type"] for b in fourth["content"]] == ["text", "tool_use"]
    assert fourth["content"][1]["input"] == {"text": "x"}
    assert fourth["stop_reason"] == "tool_use"
    fifth = post(client, body())
    assert fifth.status_code == 529
    assert fifth.json()["error"] == {"type": "overloaded_error", "message": "scripted overload"}
    assert streamed_text(post(client, body())) == "last"

    exhausted = post(client, body())
    assert exhausted.status_code == 500
    error = exhausted.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "api_error"
    assert "exhausted" in error["error"]["message"]
    assert "6 turn(s)" in error["error"]["message"]
    assert len(backend.requests) == 7
    assert backend.script_remaining == 0
    assert backend.errors == [error["error"]["message"]]


def test_a_raising_brain_becomes_a_500_with_its_message(backend: OfflineBackend, client: httpx.Client) -> None:
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("brain broke")

    backend.set_brain(brain)
    response = post(client, body())
    assert response.status_code == 500
    assert "brain broke" in response.json()["error"]["message"]
    assert backend.errors == ["offline backend: the brain raised RuntimeError: brain broke"]
    assert backend.script_remaining is None
    backend.set_brain("fine")
    assert streamed_text(post(client, body())) == "fine"
    backend.reset()
    assert backend.errors == []


def test_unsupported_brain_and_bad_settings_are_rejected() -> None:
    with pytest.raises(TypeError, match="unsupported brain"):
        OfflineBackend(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="text_chunk_size"):
        OfflineBackend(text_chunk_size=0)
    with pytest.raises(ValueError, match="delta_delay"):
        OfflineBackend(delta_delay=-1)


def test_chunk_size_and_delta_delay_shape_the_stream() -> None:
    with (
        OfflineBackend("0123456789", text_chunk_size=3, delta_delay=0.001) as backend,
        httpx.Client() as http,
    ):
        response = http.post(f"{backend.url}/v1/messages", json=body())
    deltas = [d["delta"]["text"] for e, d in sse(response) if e == "content_block_delta"]
    assert deltas == ["012", "345", "678", "9"]


# --- failure injection --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (503, "api_error"),
        (529, "overloaded_error"),
    ],
)
def test_http_failures_use_anthropic_error_shape(
    backend: OfflineBackend, client: httpx.Client, status: int, error_type: str
) -> None:
    backend.fail_next(Failure.http(status, "injected"))
    response = post(client, body())
    assert response.status_code == status
    assert response.json() == {"type": "error", "error": {"type": error_type, "message": "injected"}}
    assert response.headers["request-id"].startswith("req_")
    assert post(client, body()).status_code == 200
    assert len(backend.requests) == 2


def test_failure_count_and_reset(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.fail_next(Failure.http(401, "invalid x-api-key"), count=2)
    assert [post(client, body()).status_code for _ in range(3)] == [401, 401, 200]
    backend.fail_next(Failure.http(500, error_type="custom_error"))
    backend.reset()
    assert backend.requests == []
    assert post(client, body()).status_code == 200
    with pytest.raises(ValueError, match="count"):
        backend.fail_next(Failure.http(500), count=0)
    with pytest.raises(ValueError, match="4xx or 5xx"):
        Failure.http(200)


def test_sse_error_event_after_message_start(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.fail_next(Failure.sse_error("overloaded_error", "Overloaded"))
    response = post(client, body())
    assert response.status_code == 200
    events = sse(response)
    assert [e for e, _ in events] == ["message_start", "error"]
    assert events[1][1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

    backend.fail_next(Failure.sse_error("api_error", "boom"))
    non_stream = post(client, body(stream=False))
    assert non_stream.status_code == 500
    assert non_stream.json()["error"]["message"] == "boom"


def test_cut_stream_ends_with_an_sse_error_after_some_deltas(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.fail_next(Failure.cut("this answer will be cut short", after_deltas=2, ending="sse_error"))
    response = post(client, body())

    events = sse(response)
    assert [e for e, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "error",
    ]
    assert streamed_text(response) == "this answer will"
    assert events[-1][1]["error"]["type"] == "overloaded_error"


def test_cut_stream_drops_the_connection_mid_body(backend: OfflineBackend, client: httpx.Client) -> None:
    partial = ScriptedTurn.tool_call("mcp__t__echo", {"text": "a long argument"}, text="let me call")
    backend.fail_next(Failure.cut(partial, after_deltas=3))
    received = b""
    with pytest.raises(httpx.RemoteProtocolError), client.stream("POST", "/v1/messages", json=body()) as response:
        for chunk in response.iter_bytes():
            received += chunk
    text = received.decode()
    assert '"text_delta"' in text
    assert '"input_json_delta"' in text  # the tool call was cut part-way
    assert "message_delta" not in text
    assert "message_stop" not in text
    # A plain request hit by the same failure gets its error status instead.
    backend.fail_next(Failure.cut("x", after_deltas=0))
    assert post(client, body(stream=False)).status_code == 529
    with pytest.raises(ValueError, match="must not be negative"):
        Failure.cut("x", after_deltas=-1)


def test_malformed_sse_is_garbage(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.fail_next(Failure.malformed_sse(), count=2)
    response = post(client, body())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    [(event, data), *_] = sse(response)
    assert event == "message_start"
    assert isinstance(data, str)  # not JSON
    with pytest.raises(json.JSONDecodeError):
        json.loads(post(client, body(stream=False)).text)


def test_stall_with_a_limit_answers_529(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.fail_next(Failure.stall(0.01))
    response = post(client, body())
    assert response.status_code == 529
    with pytest.raises(ValueError, match="negative"):
        Failure.stall(-1)


def test_an_endless_stall_ends_when_the_backend_stops() -> None:
    outcome: list[object] = []
    backend = OfflineBackend()
    backend.start()
    backend.fail_next(Failure.stall())
    url = backend.url

    def call() -> None:
        try:
            outcome.append(httpx.post(f"{url}/v1/messages", json=body(), timeout=30).status_code)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    while not backend.requests:
        threading.Event().wait(0.01)
    backend.stop()
    caller.join(30)
    assert not caller.is_alive()
    assert outcome == [529]


# --- routes and robustness ----------------------------------------------------------------------------------


def test_malformed_json_is_a_400_and_not_recorded(backend: OfflineBackend, client: httpx.Client) -> None:
    response = client.post("/v1/messages", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    array = client.post("/v1/messages", content=b"[1, 2]")
    assert array.status_code == 400
    assert backend.requests == []


def test_other_routes(backend: OfflineBackend, client: httpx.Client) -> None:
    assert client.head("/").status_code == 200
    assert client.get("/").status_code == 200
    assert client.head("/api/hello").status_code == 200
    missing = client.get("/v1/models")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"
    wrong_method = client.get("/v1/messages")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["type"] == "error"
    count = client.post("/v1/messages/count_tokens?beta=true", json=body("count me"))
    assert count.status_code == 200
    assert count.json()["input_tokens"] > 0
    assert backend.requests == []


def test_non_streaming_request_and_recorded_fields(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.set_brain("plain")
    response = client.post("/v1/messages", json=body(stream=False), headers={"x-api-key": "k"})
    message = response.json()
    assert message["content"] == [{"type": "text", "text": "plain"}]
    assert message["id"].startswith("msg_")
    assert message["model"] == "claude-sonnet-4-5"
    [request] = backend.requests
    assert request.stream is False
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "k"
    assert request.raw == body(stream=False)

    post(client, {"messages": [{"role": "user", "content": "no model"}], "stream": True})
    start = sse(post(client, {"messages": [{"role": "user", "content": "x"}], "stream": True}))[0][1]
    assert start["message"]["model"] == backend.model_name
    assert backend.requests[-1].path == "/v1/messages?beta=true"


def test_concurrent_requests_are_all_recorded(backend: OfflineBackend) -> None:
    async def main() -> list[int]:
        async with httpx.AsyncClient(base_url=backend.url) as http:
            responses = await asyncio.gather(*(http.post("/v1/messages", json=body(f"q{i}")) for i in range(8)))
        return [r.status_code for r in responses]

    assert asyncio.run(main()) == [200] * 8
    assert sorted(r.last_user_text() for r in backend.requests) == sorted(f"q{i}" for i in range(8))


def test_every_connection_has_tcp_nodelay(backend: OfflineBackend) -> None:
    for _ in range(3):
        with httpx.Client(base_url=backend.url) as http:  # a new connection each time
            assert post(http, body()).status_code == 200
    flags = backend._nodelay_flags
    assert len(flags) == 3
    assert all(flags)


# --- environment, lifecycle, leaks --------------------------------------------------------------------------


def test_cli_env_points_the_cli_at_the_backend(backend: OfflineBackend, tmp_path: Path) -> None:
    env = backend.cli_env()
    assert env == {
        "ANTHROPIC_MODEL": backend.model_name,
        "ANTHROPIC_BASE_URL": backend.url,
        "ANTHROPIC_API_KEY": DUMMY_API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "ENABLE_TOOL_SEARCH": "false",
        "CLAUDE_CONFIG_DIR": str(backend.config_dir),
        "CLAUDE_CODE_TMPDIR": str(backend.tmp_dir),
    }
    assert backend.config_dir.is_dir()
    assert backend.tmp_dir.is_dir()
    assert backend.cli_env(config_dir=tmp_path)["CLAUDE_CONFIG_DIR"] == str(tmp_path)
    assert quiet_cli_env("http://x", tmp_path, tmp_path)["ANTHROPIC_BASE_URL"] == "http://x"
    assert backend.url == f"http://127.0.0.1:{backend.port}"


def _socket_fds() -> int:
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return count


def test_stop_leaves_no_thread_socket_or_temp_dir() -> None:
    threads_before = set(threading.enumerate())
    sockets_before = _socket_fds()
    backend = OfflineBackend("bye")
    with backend:
        url, port = backend.url, backend.port
        dirs = [backend.config_dir, backend.tmp_dir]
        with httpx.Client() as http:
            assert http.post(f"{url}/v1/messages", json=body()).status_code == 200
        with pytest.raises(RuntimeError, match="already running"):
            backend.start()
    assert not backend.running
    assert set(threading.enumerate()) == threads_before
    assert _socket_fds() == sockets_before
    assert not any(d.exists() for d in dirs)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = backend.url
    with pytest.raises(RuntimeError, match="not running"):
        backend.cli_env()
    backend.stop()  # idempotent

    with backend, httpx.Client() as http:  # restartable; records survive until reset()
        assert http.post(f"{backend.url}/v1/messages", json=body()).status_code == 200
        assert len(backend.requests) == 2


def test_stop_while_a_keep_alive_connection_is_open() -> None:
    backend = OfflineBackend()
    backend.start()
    http = httpx.Client(base_url=backend.url)
    try:
        assert post(http, body()).status_code == 200
        backend.stop()
        assert not backend.running
    finally:
        http.close()


async def test_async_context_manager() -> None:
    async with OfflineBackend("async hi") as backend:
        async with httpx.AsyncClient(base_url=backend.url) as http:
            response = await http.post("/v1/messages", json=body())
        assert streamed_text(response) == "async hi"
    assert not backend.running


def test_pytest_fixtures(claude_backend: OfflineBackend, claude_cli_env: dict[str, str]) -> None:
    assert claude_backend.running
    assert claude_cli_env == claude_backend.cli_env()
    claude_backend.set_brain(["scripted"])
    with httpx.Client() as http:
        response = http.post(f"{claude_cli_env['ANTHROPIC_BASE_URL']}/v1/messages", json=body())
    assert streamed_text(response) == "scripted"


def test_tool_call_ids_from_brains_are_anthropic_style(backend: OfflineBackend, client: httpx.Client) -> None:
    backend.set_brain([[ToolCallPart("mcp__t__echo", {"text": "a"}, tool_call_id="call_1")]])
    message = post(client, body(stream=False, tools=TOOLS)).json()
    assert message["content"][0]["id"].startswith("toolu_")


def test_public_names_resolve() -> None:
    import claudecode_model.testing as testing

    for name in testing.__all__:
        assert getattr(testing, name) is not None
    assert set(testing.__all__) <= set(dir(testing))
    with pytest.raises(AttributeError, match="no attribute"):
        _ = testing.not_a_name


def test_temp_dirs_are_removed_at_exit_even_without_stop() -> None:
    script = (
        "from claudecode_model.testing import OfflineBackend\n"
        "backend = OfflineBackend()\n"
        "backend.start()\n"
        "print(backend.config_dir)\n"
        "print(backend.tmp_dir)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    dirs = [Path(line) for line in done.stdout.split()]
    assert len(dirs) == 2
    assert not any(d.exists() for d in dirs)


def test_temp_dirs_left_by_a_program_killed_with_sigterm_are_removed_by_the_next_backend() -> None:
    """SIGTERM's default action runs no finalizer: the dirs stay until a backend of a later program starts (one of a
    live program is never touched)."""
    script = (
        "import sys\n"
        "from claudecode_model.testing import OfflineBackend\n"
        "backend = OfflineBackend()\n"
        "backend.start()\n"
        "print(backend.config_dir, backend.tmp_dir, flush=True)\n"
        "sys.stdin.read()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    alive = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert killed.stdout is not None
        assert alive.stdout is not None
        left = [Path(name) for name in killed.stdout.readline().split()]
        kept = [Path(name) for name in alive.stdout.readline().split()]
        killed.send_signal(signal.SIGTERM)
        assert killed.wait(30) == -signal.SIGTERM
        assert len(left) == 2
        assert all(d.is_dir() for d in left)

        with OfflineBackend():
            assert not any(d.exists() for d in left)
            assert all(d.is_dir() for d in kept)
    finally:
        for process in (killed, alive):
            process.kill()
            process.communicate(timeout=30)


def test_stopping_with_a_brain_call_pending_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    answering = threading.Event()

    async def slow_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answering.set()
        await asyncio.sleep(60)
        return ModelResponse(parts=[TextPart("too late")])

    backend = OfflineBackend(FunctionModel(slow_brain))
    backend.start()
    statuses: list[int | str] = []

    def ask() -> None:
        try:
            statuses.append(httpx.post(f"{backend.url}/v1/messages", json=body(), timeout=30).status_code)
        except httpx.HTTPError as error:
            statuses.append(type(error).__name__)

    asking = threading.Thread(target=ask)
    asking.start()
    assert answering.wait(10)
    with caplog.at_level("WARNING"):
        backend.stop()
    asking.join(30)

    assert statuses == [529]  # the client is told, like an overloaded API, not cut off
    assert [record.getMessage() for record in caplog.records] == []  # no ASGI traceback, no forced cancellation


def test_the_standalone_backend_serves_a_brain_of_yours_until_interrupted(tmp_path: Path) -> None:
    (tmp_path / "my_brains.py").write_text(
        "from pydantic_ai.messages import ModelResponse, TextPart\n\n"
        "def polite(messages, info):\n"
        "    return ModelResponse(parts=[TextPart('Certainly.')])\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "claudecode_model.testing", "--brain", "my_brains:polite"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        env: dict[str, str] = {}
        while "CLAUDE_CODE_TMPDIR" not in env:
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            name, _, value = line.removeprefix("export ").strip().partition("=")
            env[name] = value.strip("'")
        assert env["ANTHROPIC_API_KEY"] == DUMMY_API_KEY
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert Path(env["CLAUDE_CONFIG_DIR"]).is_dir()

        reply = httpx.post(f"{env['ANTHROPIC_BASE_URL']}/v1/messages", json=body(stream=False), timeout=30)
        assert reply.json()["content"] == [{"type": "text", "text": "Certainly."}]
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)

    assert process.returncode == 0
    assert stderr.startswith("# offline backend listening on http://127.0.0.1:")
    assert "Traceback" not in stderr
    assert not Path(env["CLAUDE_CONFIG_DIR"]).exists()  # removed when it stopped
