"""Property-based fuzzing: the IPC framing and session, the IPC bridge's input, and the offline backend's request
parser and HTTP endpoint. No input may crash, hang or get an unclear answer.

tests/ipc/test_ipc_framing.py already fuzzes ``FrameDecoder`` with arbitrary bytes and the encode/decode round
trip of well-formed messages; this file adds JSON-level fuzzing of ``decode_message``, the stream reader against
the incremental decoder, and a live ``IPCSession`` fed arbitrary frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claudecode_model.ipc import IPCSession, stdio_server_config
from claudecode_model.ipc._framing import (
    FrameDecoder,
    FrameError,
    MessageFormatError,
    decode_message,
    encode_body,
    encode_message,
)
from claudecode_model.ipc._protocol import hello_request
from claudecode_model.ipc._streams import read_frame
from claudecode_model.testing import OfflineBackend
from tests._support.requests import recorded

if TYPE_CHECKING:
    from collections.abc import Iterator

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIVE_FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies ---------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=16,
)
"""Any JSON value."""

_SCALAR_TEXTS = st.sampled_from(
    [
        *("null", "true", "false", "0", "-0", "1.5e300", "1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity"),
        *('"\\ud800"', '"\\u0000"', '""', '"é"', "1" * 5000, "01", "1.", ".5", "+1", "tru"),
    ]
)
json_texts = st.recursive(
    _SCALAR_TEXTS | st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr),
    lambda children: (
        st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
        | st.lists(st.tuples(st.text(max_size=6).map(json.dumps), children), max_size=4).map(
            lambda pairs: "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"
        )
    ),
    max_leaves=12,
)
"""JSON-like text, valid and not: edge numbers, NaN/Infinity literals, lone surrogates, sloppy syntax."""


def _blocks() -> st.SearchStrategy[Any]:
    source = st.fixed_dictionaries(
        {"type": st.sampled_from(["base64", "url", "text", "file"]) | json_values},
        optional={"data": json_values | st.text(max_size=20), "media_type": json_values, "url": json_values},
    )
    return st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking", "odd"]
            )
            | json_values
        },
        optional={
            "text": json_values,
            "source": source | json_values,
            "id": json_values,
            "name": json_values,
            "input": json_values,
            "tool_use_id": json_values,
            "content": json_values | st.lists(json_values, max_size=3),
            "is_error": json_values,
            "thinking": json_values,
            "signature": json_values,
            "data": json_values,
        },
    )


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool"]) | json_values},
    optional={"content": st.text(max_size=12) | st.lists(_blocks() | json_values, max_size=4) | json_values},
)
_tool = st.fixed_dictionaries(
    {}, optional={"name": json_values, "description": json_values, "input_schema": json_values}
)
request_bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": json_values,
        "stream": st.booleans() | json_values,
        "max_tokens": json_values,
        "system": json_values | st.lists(_blocks(), max_size=3),
        "messages": st.lists(_message | json_values, max_size=5) | json_values,
        "tools": st.lists(_tool | json_values, max_size=3) | json_values,
    },
)
"""Messages API request bodies: the right keys with anything (and everything wrong) inside."""


# --- IPC framing --------------------------------------------------------------------------------------------


@FUZZ
@given(text=json_texts)
def test_fuzz_decoded_messages_can_always_be_encoded_again(text: str) -> None:
    body = text.encode("utf-8", "surrogatepass")
    try:
        message = decode_message(body)
    except MessageFormatError:
        return
    assert isinstance(message, dict)
    assert decode_message(encode_message(message)[4:]) == message


@pytest.mark.parametrize("number", ["1e400", "-1e400", "123e456789"])
def test_numbers_out_of_float_range_are_format_errors(number: str) -> None:
    with pytest.raises(MessageFormatError, match="out of range"):
        decode_message(f'{{"x": {number}}}'.encode())


def _frames_from_reader(data: bytes) -> tuple[list[bytes], type[Exception] | None]:
    async def read_all() -> tuple[list[bytes], type[Exception] | None]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        bodies: list[bytes] = []
        try:
            async with asyncio.timeout(10):  # EOF is fed: anything longer is a hang
                while (body := await read_frame(reader, 256)) is not None:
                    bodies.append(body)
        except FrameError as exc:
            return bodies, type(exc)
        return bodies, None

    return asyncio.run(read_all())


def _frames_from_decoder(data: bytes, chunk: int) -> tuple[list[bytes], type[Exception] | None]:
    decoder = FrameDecoder(limit=256)
    bodies: list[bytes] = []
    try:
        for start in range(0, len(data), chunk):
            bodies += decoder.feed(data[start : start + chunk])
        decoder.check_eof()
    except FrameError as exc:
        return bodies, type(exc)
    return bodies, None


@FUZZ
@given(
    pieces=st.lists(
        st.binary(max_size=40).map(encode_body)
        | st.binary(max_size=12)
        | json_values.map(lambda v: encode_message({"v": v})),
        max_size=6,
    ),
    chunk=st.integers(min_value=1, max_value=17),
)
def test_fuzz_stream_reader_and_incremental_decoder_agree(pieces: list[bytes], chunk: int) -> None:
    data = b"".join(pieces)
    read, read_error = _frames_from_reader(data)
    decoded, decode_error = _frames_from_decoder(data, chunk)
    assert read_error == decode_error
    if decode_error is None:
        assert decoded == read
    else:
        # feed() raises for an oversized prefix and drops the frames completed by the same chunk; the connection
        # is closed anyway.
        assert decoded == read[: len(decoded)]


# --- a live IPC session fed arbitrary frames ----------------------------------------------------------------

SCHEMAS: list[Any] = [
    {"name": "echo", "description": "Echo the arguments.", "input_schema": {"type": "object"}},
    {"name": "fail", "description": "Always fails.", "input_schema": {"type": "object"}},
]


async def _echo(arguments: dict[str, object]) -> dict[str, object]:
    return {"content": [{"type": "text", "text": json.dumps(arguments, sort_keys=True)}]}


async def _fail(arguments: dict[str, object]) -> dict[str, object]:
    raise ValueError("this tool always fails")


_ids = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=2**40)
    | st.text(max_size=4)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_ipc_messages = st.fixed_dictionaries(
    {},
    optional={
        "id": _ids,
        "method": st.sampled_from(["call_tool", "cancel", "hello", "tools/list", ""]) | json_values,
        "params": json_values
        | st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["echo", "fail", "missing"]) | json_values,
                "arguments": json_values,
                "meta": json_values,
                "id": _ids,
                "secret": st.text(max_size=8),
            },
        ),
    },
)
_frames = st.lists(
    _ipc_messages.map(lambda m: encode_message(m))
    | json_texts.map(lambda t: encode_body(t.encode("utf-8", "surrogatepass"))),
    max_size=8,
)
PROBE_ID = 2**50


async def _feed_session(frames: list[bytes]) -> dict[str, object]:
    """Authenticate, send ``frames``, then a valid call; return the answer to that call."""
    async with IPCSession({"echo": _echo, "fail": _fail}, SCHEMAS) as session:
        reader, writer = await asyncio.open_unix_connection(str(session.socket_path))
        try:
            writer.write(encode_message(hello_request(session.secret)))
            writer.write(b"".join(frames))
            probe = {"id": PROBE_ID, "method": "call_tool", "params": {"name": "echo", "arguments": {"probe": 1}}}
            writer.write(encode_message(probe))
            await writer.drain()
            async with asyncio.timeout(20):
                while True:
                    body = await read_frame(reader)
                    assert body is not None, "the session closed the connection"
                    answer = decode_message(body)
                    assert set(answer) <= {"id", "result", "error"}
                    if answer.get("id") == PROBE_ID:
                        return answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


@LIVE_FUZZ
@given(frames=_frames)
def test_fuzz_session_survives_arbitrary_frames(frames: list[bytes]) -> None:
    answer = asyncio.run(_feed_session(frames))
    assert answer == {
        "id": PROBE_ID,
        "result": {"content": [{"type": "text", "text": '{"probe": 1}'}], "isError": False},
    }


async def _first_frame_answer(first: bytes) -> tuple[bytes, int]:
    async with IPCSession({"echo": _echo, "fail": _fail}, SCHEMAS, handshake_timeout=5) as session:
        reader, writer = await asyncio.open_unix_connection(str(session.socket_path))
        try:
            writer.write(first + encode_message({"id": 1, "method": "call_tool", "params": {"name": "echo"}}))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            async with asyncio.timeout(20):
                received = await reader.read()  # until the session closes the connection
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        return received, session.calls_completed


@LIVE_FUZZ
@given(first=_ipc_messages.map(lambda m: encode_message(m)) | st.binary(max_size=64))
def test_fuzz_nothing_but_the_secret_authenticates(first: bytes) -> None:
    received, calls = asyncio.run(_first_frame_answer(first))

    assert calls == 0
    assert b'"authenticated"' not in received
    assert len(received) < 200, "at most one refusal frame, then the connection is closed"


# --- the IPC bridge's JSON-RPC input ------------------------------------------------------------------------


@pytest.fixture
def bridge_call() -> Any:
    """``bridge_call(lines, replies)``: run a real bridge for a session with an echo tool, send ``lines``, wait for
    ``replies`` answers, close its stdin; return the answers and its exit status."""

    async def run(lines: list[str], replies: int) -> tuple[list[dict[str, Any]], int]:
        async with IPCSession({"echo": _echo, "fail": _fail}, SCHEMAS) as session:
            config = stdio_server_config(session)
            process = await asyncio.create_subprocess_exec(
                config["command"],
                *config["args"],
                env={**os.environ, **config["env"]},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert process.stdin is not None
            assert process.stdout is not None
            try:
                process.stdin.write("\n".join(lines).encode() + b"\n")
                await process.stdin.drain()
                answers: list[dict[str, Any]] = []
                async with asyncio.timeout(30):
                    while len(answers) < replies and (line := await process.stdout.readline()):
                        answers.append(json.loads(line))
                process.stdin.close()
                returncode = await asyncio.wait_for(process.wait(), 30)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            return answers, returncode

    return lambda lines, replies: asyncio.run(run(lines, replies))


@pytest.mark.parametrize("value", ["1e400", "-1e999", "NaN", "Infinity"])
def test_bridge_answers_out_of_range_numbers_with_an_error_and_keeps_serving(value: str, bridge_call: Any) -> None:
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}',
        f'{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"x":{value}}}}}}}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}',
    ]

    replies, returncode = bridge_call(lines, 3)

    assert returncode == 0, "the bridge did not crash"
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[3]["result"] == {"content": [{"type": "text", "text": '{"x": 1}'}], "isError": False}


# --- the offline backend: request parser --------------------------------------------------------------------


@FUZZ
@given(body=request_bodies)
def test_fuzz_request_parser_accepts_any_json_object(body: dict[str, Any]) -> None:
    record = recorded(body)
    # Every helper works on whatever was parsed.
    record.user_texts()
    record.last_user_text()
    record.tool_calls()
    record.tool_results()
    record.has_image()
    record.has_document()
    record.has_thinking()
    assert all(isinstance(name, str) for name in record.tool_names)


# --- the offline backend: HTTP endpoint ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_backend() -> Iterator[tuple[OfflineBackend, httpx.Client]]:
    with OfflineBackend() as backend, httpx.Client(base_url=backend.url, timeout=30) as client:
        yield backend, client


def _assert_clean_answer(response: httpx.Response, backend: OfflineBackend, errors_before: int) -> None:
    """A Messages API answer, or an Anthropic-shaped error: 4xx for bad input, 500 only for a brain failure."""
    if response.status_code == 200:
        if response.headers["content-type"].startswith("text/event-stream"):
            assert response.text.startswith("event: message_start")
            assert response.text.rstrip().endswith('data: {"type":"message_stop"}')
        else:
            assert response.json()["type"] == "message"
        return
    body = response.json()
    assert set(body) == {"type", "error"}
    assert body["type"] == "error"
    assert isinstance(body["error"]["type"], str)
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    if response.status_code >= 500:
        # Only a brain that cannot answer this conversation gives a 500, and the backend records why.
        assert response.status_code == 500
        assert body["error"]["type"] == "api_error"
        assert len(backend.errors) > errors_before
        assert backend.errors[-1] == body["error"]["message"]
    else:
        assert 400 <= response.status_code < 500


@FUZZ
@given(body=request_bodies)
def test_fuzz_messages_endpoint_with_arbitrary_request_objects(
    body: dict[str, Any], http_backend: tuple[OfflineBackend, httpx.Client]
) -> None:
    backend, client = http_backend
    errors_before = len(backend.errors)

    response = client.post("/v1/messages?beta=true", content=json.dumps(body).encode())

    _assert_clean_answer(response, backend, errors_before)


@FUZZ
@given(
    raw=json_texts.map(lambda t: t.encode("utf-8", "surrogatepass")) | st.binary(max_size=200),
    path=st.sampled_from(["/v1/messages", "/v1/messages/count_tokens"]),
)
def test_fuzz_endpoints_with_arbitrary_bytes(
    raw: bytes, path: str, http_backend: tuple[OfflineBackend, httpx.Client]
) -> None:
    backend, client = http_backend
    errors_before = len(backend.errors)

    response = client.post(path, content=raw)

    if path.endswith("count_tokens") and response.status_code == 200:
        assert isinstance(response.json()["input_tokens"], int)
        return
    _assert_clean_answer(response, backend, errors_before)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"messages": 1' + b"0" * 5000 + b"}", "digits"),
        (b"[" * 50_000 + b"]" * 50_000, "recursion"),
        (b'{"messages": [], "temperature": NaN}', "NaN"),
        (b'{"messages": [], "temperature": 1e400}', "out of range"),
        (b"\xff\xfe{}", "JSON"),
    ],
)
def test_json_the_backend_cannot_take_is_a_400(
    raw: bytes, reason: str, http_backend: tuple[OfflineBackend, httpx.Client]
) -> None:
    _, client = http_backend
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        response = client.post(path, content=raw)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert reason.lower() in error["message"].lower()
    # The backend still answers.
    ok = client.post("/v1/messages", json={"messages": [{"role": "user", "content": "hi"}]})
    assert ok.status_code == 200
