"""The parent side: IPCSession lifecycle, files, security, calls, concurrency and robustness."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import claudecode_model
from claudecode_model.exceptions import (
    BridgeStartupError,
    IPCConnectionError,
    IPCMessageSizeError,
    IPCToolExecutionError,
    ToolValidationError,
)
from claudecode_model.ipc import (
    DEFAULT_TRANSPORT,
    MAX_MESSAGE_SIZE,
    SCHEMA_FILE_PREFIX,
    SECRET_ENV_VAR,
    SOCKET_FILE_PREFIX,
    SOCKET_FILE_SUFFIX,
    SOCKET_PERMISSIONS,
    IPCClient,
    IPCSession,
    IPCSessionState,
    JsonValue,
    ToolSchema,
    stdio_server_config,
    tool_use_id,
)
from claudecode_model.ipc._framing import decode_message, encode_body, encode_message
from claudecode_model.ipc._protocol import hello_request
from tests._support.ipc import Toolbox, text_result
from tests._support.mcp import first_text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

PACKAGE_ROOT = str(Path(claudecode_model.__file__).resolve().parent.parent)


def mode(path: object) -> int:
    return stat.S_IMODE(os.stat(str(path)).st_mode)


class RawConnection:
    """A hand-driven socket to the session, for sending what a well-behaved bridge never would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, session: IPCSession, *, authenticate: bool = True) -> RawConnection:
        reader, writer = await asyncio.open_unix_connection(str(session.socket_path))
        connection = cls(reader, writer)
        if authenticate:
            await connection.send(encode_message(hello_request(session.secret)))
            assert await connection.receive() == {"id": 0, "result": {"authenticated": True}}
        return connection

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self) -> dict[str, object] | None:
        """The next message, or None when the server closed the connection."""
        try:
            prefix = await asyncio.wait_for(self.reader.readexactly(4), 10)
            body = await asyncio.wait_for(self.reader.readexactly(struct.unpack(">I", prefix)[0]), 10)
        except asyncio.IncompleteReadError:
            return None
        return decode_message(body)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@pytest.fixture
async def client(session: IPCSession) -> AsyncIterator[IPCClient]:
    async with await IPCClient.connect(session.socket_path, session.secret) as connected:
        yield connected


# --- construction and lifecycle -----------------------------------------------------------------------------


def test_default_transport_is_auto() -> None:
    assert DEFAULT_TRANSPORT == "auto"


def test_handlers_and_schemas_must_match(toolbox: Toolbox) -> None:
    schemas = toolbox.schemas
    with pytest.raises(ToolValidationError, match="no handler for \\['whoami'\\]"):
        IPCSession(toolbox.handlers, schemas)
    with pytest.raises(ToolValidationError, match="no schema for \\['extra'\\]"):
        IPCSession({**toolbox.handlers, "extra": toolbox.echo}, schemas, meta_tool_handlers=toolbox.meta_handlers)
    with pytest.raises(ToolValidationError, match="two handlers"):
        IPCSession(toolbox.handlers, schemas, meta_tool_handlers={**toolbox.meta_handlers, "echo": toolbox.whoami})
    with pytest.raises(ToolValidationError, match="listed twice"):
        IPCSession({"echo": toolbox.echo}, [schemas[0], schemas[0]])
    with pytest.raises(ToolValidationError, match="input_schema"):
        IPCSession({"echo": toolbox.echo}, [{"name": "echo", "description": "", "input_schema": None}])  # type: ignore[typeddict-item]  # invalid on purpose


async def test_start_creates_private_files_and_stop_removes_them(toolbox: Toolbox) -> None:
    session = toolbox.session()
    assert session.state is IPCSessionState.CREATED
    with pytest.raises(RuntimeError, match="not been started"):
        _ = session.socket_path
    await session.start()
    try:
        assert session.state is IPCSessionState.STARTED
        directory, sock, schema = session.directory, session.socket_path, session.schema_path
        assert directory.name.startswith(SOCKET_FILE_PREFIX)
        assert mode(directory) == 0o700
        assert sock.parent == directory == schema.parent
        assert sock.name.startswith(SOCKET_FILE_PREFIX)
        assert sock.name.endswith(SOCKET_FILE_SUFFIX)
        assert len(sock.name) == len(SOCKET_FILE_PREFIX) + 32 + len(SOCKET_FILE_SUFFIX)
        assert schema.name.startswith(SCHEMA_FILE_PREFIX)
        assert sock.name[len(SOCKET_FILE_PREFIX) : -len(SOCKET_FILE_SUFFIX)] in schema.name, "one uuid for both"
        assert stat.S_ISSOCK(os.stat(sock).st_mode)
        assert mode(sock) == SOCKET_PERMISSIONS == 0o600
        assert mode(schema) == 0o600
        assert len(os.fsencode(str(sock))) <= 107
        assert json.loads(schema.read_text()) == toolbox.schemas
        assert sorted(os.listdir(directory)) == sorted([sock.name, schema.name])
    finally:
        await session.stop()
    assert session.state is IPCSessionState.STOPPED
    assert not directory.exists()
    await session.stop()  # idempotent
    assert session.state is IPCSessionState.STOPPED
    with pytest.raises(RuntimeError, match="only once"):
        await session.start()


async def test_modes_do_not_depend_on_the_umask(toolbox: Toolbox) -> None:
    previous = os.umask(0o277)
    try:
        async with toolbox.session() as session:
            assert mode(session.socket_path) == 0o600
            assert mode(session.schema_path) == 0o600
            assert mode(session.directory) == 0o700
    finally:
        os.umask(previous)


async def test_stop_before_start_and_twice_is_harmless(toolbox: Toolbox) -> None:
    session = toolbox.session()
    await session.stop()
    await session.stop()
    assert session.state is IPCSessionState.STOPPED
    with pytest.raises(RuntimeError):
        await session.start()


async def test_context_manager_cleans_up_when_the_body_raises(toolbox: Toolbox) -> None:
    session = toolbox.session()
    seen: list[Path] = []

    async def failing_body() -> None:
        async with session:
            seen.append(session.directory)
            raise KeyError("boom")

    with pytest.raises(KeyError):
        await failing_body()
    directory = seen[0]
    assert session.state is IPCSessionState.STOPPED
    assert not directory.exists()


async def test_start_failure_cleans_up_and_raises_bridge_startup_error(
    toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(asyncio, "start_unix_server", refuse)
    session = toolbox.session()
    with pytest.raises(BridgeStartupError, match="Address already in use"):
        await session.start()
    assert session.state is IPCSessionState.STOPPED
    await session.stop()


async def test_cancelled_start_cleans_up_and_propagates(toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch) -> None:
    async def cancelled(*args: object, **kwargs: object) -> None:
        raise asyncio.CancelledError

    monkeypatch.setattr(asyncio, "start_unix_server", cancelled)
    session = toolbox.session()
    with pytest.raises(asyncio.CancelledError):
        await session.start()
    assert session.state is IPCSessionState.STOPPED


async def test_start_failure_writing_the_schema_cleans_up(toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: IPCSession, path: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(IPCSession, "_write_schema_file", broken)
    with pytest.raises(BridgeStartupError, match="No space left"):
        await toolbox.session().start()


async def test_too_long_temp_dir_falls_back_to_tmp(toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.gettempdir", lambda: "/tmp/" + "d" * 90)
    async with toolbox.session() as session:
        assert str(session.directory).startswith("/tmp/" + SOCKET_FILE_PREFIX)


async def test_stdio_server_config(session: IPCSession) -> None:
    config = stdio_server_config(session)
    assert config["type"] == "stdio"
    assert config["command"] == sys.executable
    assert config["args"] == [
        "-m",
        "claudecode_model.ipc.bridge",
        str(session.socket_path),
        str(session.schema_path),
    ]
    env = config["env"]
    assert env[SECRET_ENV_VAR] == session.secret
    assert len(session.secret) == 64
    assert session.secret not in " ".join(config["args"])
    assert env["PYTHONSAFEPATH"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == PACKAGE_ROOT


def test_sessions_have_distinct_secrets(toolbox: Toolbox) -> None:
    assert toolbox.session().secret != toolbox.session().secret


# --- calls --------------------------------------------------------------------------------------------------


async def test_call_returns_the_exact_text(session: IPCSession, client: IPCClient) -> None:
    text = 'line 1\nline 2 — ünïcödé 🎉 "quoted" {json: 1}'
    assert await client.call_tool("echo", {"text": text}) == text_result(text)
    assert session.calls_completed == 1


async def test_tool_exception_becomes_an_error_with_its_message(client: IPCClient) -> None:
    with pytest.raises(IPCToolExecutionError) as caught:
        await client.call_tool("fail", {"why": "disk on fire"})
    assert str(caught.value) == "the tool failed: disk on fire"
    assert "error type: ValueError" in caught.value.__notes__


async def test_handler_is_error_results_are_returned(toolbox: Toolbox) -> None:
    async def soft_fail(arguments: dict[str, object]) -> dict[str, object]:
        return {"content": [{"type": "text", "text": "bad input"}], "is_error": True}

    schema: ToolSchema = {"name": "soft", "description": "", "input_schema": {"type": "object"}}
    async with (
        IPCSession({"soft": soft_fail}, [schema]) as session,
        await IPCClient.connect(session.socket_path, session.secret) as client,
    ):
        assert await client.call_tool("soft", {}) == text_result("bad input", is_error=True)


async def test_unknown_tool(client: IPCClient) -> None:
    with pytest.raises(IPCToolExecutionError) as caught:
        await client.call_tool("nope", {})
    assert str(caught.value) == "Tool 'nope' not found"
    assert "error type: ToolNotFoundError" in caught.value.__notes__


@pytest.mark.parametrize(
    ("returned", "problem"),
    [
        ("just a string", "must be a dict"),
        ({"content": "text"}, "'content' list"),
        ({"content": [{"type": "image", "data": ""}]}, "needs 'data' \\(base64\\) and 'mimeType'"),
        ({"content": [{"type": "audio", "data": "AAAA"}]}, "only 'text', 'image' and 'resource' blocks"),
        ({"content": [{"type": "resource", "resource": "x"}]}, "needs a 'resource' object"),
        ({"content": [{"type": "text"}]}, "no 'text' string"),
        ({"content": [], "isError": "yes"}, "must be a bool"),
    ],
)
async def test_invalid_handler_results_are_reported(returned: object, problem: str) -> None:
    async def odd(arguments: dict[str, object]) -> object:
        return returned

    schema: ToolSchema = {"name": "odd", "description": "", "input_schema": {"type": "object"}}
    async with (
        IPCSession({"odd": odd}, [schema]) as session,  # type: ignore[dict-item]  # a handler returning anything
        await IPCClient.connect(session.socket_path, session.secret) as client,
    ):
        with pytest.raises(IPCToolExecutionError, match=problem) as caught:
            await client.call_tool("odd", {})
        assert "error type: IPCToolExecutionError" in caught.value.__notes__


async def test_meta_handlers_receive_the_tool_use_id(toolbox: Toolbox, client: IPCClient) -> None:
    meta: dict[str, JsonValue] = {"claudecode/toolUseId": "toolu_123", "progressToken": 4}
    assert await client.call_tool("whoami", {}, meta) == text_result("tool_use_id=toolu_123")
    assert toolbox.metas == [meta]
    assert tool_use_id(toolbox.metas[0]) == "toolu_123"
    assert await client.call_tool("whoami", {}) == text_result("tool_use_id=None")
    assert tool_use_id(toolbox.metas[1]) is None


async def test_large_result_within_the_limit(client: IPCClient) -> None:
    result = await client.call_tool("big", {"size": 5_000_000})
    assert first_text(result) == "x" * 5_000_000


async def test_oversized_result_is_a_size_error(client: IPCClient) -> None:
    with pytest.raises(IPCMessageSizeError, match="too large"):
        await client.call_tool("big", {"size": MAX_MESSAGE_SIZE + 1})
    assert await client.call_tool("echo", {"text": "still fine"}) == text_result("still fine")


async def test_oversized_request_is_refused_before_sending(client: IPCClient) -> None:
    with pytest.raises(IPCMessageSizeError):
        await client.call_tool("echo", {"text": "x" * MAX_MESSAGE_SIZE})


# --- concurrency --------------------------------------------------------------------------------------------


async def test_twenty_concurrent_calls_on_one_connection_are_routed(client: IPCClient) -> None:
    # "together" only returns once all 20 calls are running at the same time.
    results = await asyncio.wait_for(asyncio.gather(*(client.call_tool("together", {"n": n}) for n in range(20))), 20)
    assert [first_text(r) for r in results] == [f"call {n}" for n in range(20)]


async def test_concurrent_calls_over_several_connections(toolbox: Toolbox, session: IPCSession) -> None:
    toolbox.barrier_parties = 12
    clients = [await IPCClient.connect(session.socket_path, session.secret) for _ in range(4)]
    try:
        calls = [clients[n % 4].call_tool("together", {"n": n}) for n in range(12)]
        results = await asyncio.wait_for(asyncio.gather(*calls), 20)
        assert [first_text(r) for r in results] == [f"call {n}" for n in range(12)]
        assert session.connection_count == 4
    finally:
        for connected in clients:
            await connected.aclose()


# --- security -----------------------------------------------------------------------------------------------


async def test_wrong_secret_is_refused_and_logged(session: IPCSession, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(IPCConnectionError, match="authentication failed"):
        await IPCClient.connect(session.socket_path, "0" * 64)
    assert "wrong session secret" in caplog.text
    assert session.calls_completed == 0


async def test_missing_hello_is_refused(session: IPCSession, caplog: pytest.LogCaptureFixture) -> None:
    raw = await RawConnection.open(session, authenticate=False)
    with caplog.at_level(logging.WARNING):
        await raw.send(encode_message({"id": 1, "method": "call_tool", "params": {"name": "echo", "arguments": {}}}))
        refusal = await raw.receive()
        assert refusal is not None
        assert refusal["error"] == {"message": "authentication failed", "type": "IPCAuthenticationError"}
        assert await raw.receive() is None
    await raw.close()
    assert "missing or wrong session secret" in caplog.text
    assert session.calls_completed == 0


async def test_large_first_frame_is_refused_without_reading_it(
    session: IPCSession, caplog: pytest.LogCaptureFixture
) -> None:
    raw = await RawConnection.open(session, authenticate=False)
    with caplog.at_level(logging.WARNING):
        await raw.send(struct.pack(">I", 5000))
        assert await raw.receive() is None
    await raw.close()
    assert "exceeds the limit of 4096" in caplog.text


async def test_silent_connection_is_dropped_after_the_handshake_timeout(
    toolbox: Toolbox, caplog: pytest.LogCaptureFixture
) -> None:
    async with toolbox.session(handshake_timeout=0.2) as session:
        raw = await RawConnection.open(session, authenticate=False)
        with caplog.at_level(logging.WARNING):
            assert await raw.receive() is None
        await raw.close()
    assert "no authentication within the timeout" in caplog.text


PEER_CLIENT = """
import json, os, socket, struct, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
body = json.dumps({"id": 0, "method": "hello", "params": {"secret": os.environ["SECRET"]}}).encode()
try:
    sock.sendall(struct.pack(">I", len(body)) + body)
    data = sock.recv(65536)
except OSError:  # the server may close before we finished writing
    data = b""
print("uid", os.getuid(), "received", len(data))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
async def test_connection_from_another_uid_is_refused(session: IPCSession, caplog: pytest.LogCaptureFixture) -> None:
    # Loosen the file modes: only the peer-credential check stands between the other user and the tools.
    os.chmod(session.directory, 0o711)
    os.chmod(session.socket_path, 0o666)
    command = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-I",
        "-S",
        "-c",
    ]
    with caplog.at_level(logging.WARNING):
        process = await asyncio.create_subprocess_exec(
            *command,
            PEER_CLIENT,
            str(session.socket_path),
            env={"SECRET": session.secret},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert stdout.decode().split() == ["uid", "65534", "received", "0"], "closed without any answer"
    assert "uid 65534 is not our uid 0" in caplog.text
    assert session.calls_completed == 0


async def test_same_uid_connection_with_the_secret_is_accepted(session: IPCSession) -> None:
    raw = await RawConnection.open(session)
    await raw.close()


# --- robustness ---------------------------------------------------------------------------------------------


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, object]]]:
    """Errors reported to the event loop's exception handler (unhandled task errors and the like)."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: errors.append(context))
    yield errors
    loop.set_exception_handler(previous)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "empty IPC message"),
        (b"\xc3\x28", "not valid UTF-8"),
        (b"{oops", "not valid JSON"),
        (b"[1]", "not an object"),
    ],
)
async def test_garbage_frames_get_an_error_and_the_connection_goes_on(
    session: IPCSession, payload: bytes, problem: str, loop_errors: list[dict[str, object]]
) -> None:
    raw = await RawConnection.open(session)
    await raw.send(encode_body(payload))
    answer = await raw.receive()
    assert answer is not None
    assert answer["id"] is None
    error = answer["error"]
    assert isinstance(error, dict)
    assert problem in error["message"]
    assert error["type"] == "IPCProtocolError"
    await raw.send(
        encode_message({"id": 5, "method": "call_tool", "params": {"name": "echo", "arguments": {"text": "ok"}}})
    )
    assert await raw.receive() == {"id": 5, "result": text_result("ok")}
    await raw.close()
    assert loop_errors == []


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"id": "1", "method": "call_tool", "params": {"name": "echo", "arguments": {}}}, "integer id"),
        ({"id": True, "method": "call_tool", "params": {"name": "echo", "arguments": {}}}, "integer id"),
        ({"id": 1, "method": "call_tool", "params": {"arguments": {}}}, "tool name"),
        ({"id": 1, "method": "call_tool", "params": {"name": "echo", "arguments": []}}, "must be an object"),
        ({"id": 1, "method": "call_tool", "params": {"name": "echo", "arguments": {}, "meta": 3}}, "meta"),
        ({"id": 1, "method": "call_tool", "params": "echo"}, "tool name"),
        ({"id": 1, "method": "shutdown"}, "unknown IPC method 'shutdown'"),
        ({"id": 1}, "unknown IPC method None"),
    ],
)
async def test_malformed_requests_get_an_error(session: IPCSession, message: dict[str, object], problem: str) -> None:
    raw = await RawConnection.open(session)
    await raw.send(encode_message(message))
    answer = await raw.receive()
    assert answer is not None
    error = answer["error"]
    assert isinstance(error, dict)
    assert problem in error["message"]
    await raw.close()


async def test_duplicate_call_id_in_flight_is_refused(toolbox: Toolbox, session: IPCSession) -> None:
    raw = await RawConnection.open(session)
    call = {"id": 9, "method": "call_tool", "params": {"name": "block", "arguments": {}}}
    await raw.send(encode_message(call))
    await asyncio.wait_for(toolbox.started.wait(), 10)
    await raw.send(encode_message(call))
    answer = await raw.receive()
    assert answer is not None
    assert answer["id"] == 9
    assert "already in use" in str(answer["error"])
    await raw.close()
    await asyncio.wait_for(toolbox.cancelled.wait(), 10)


async def test_oversized_frame_gets_a_size_error_and_the_connection_is_closed(session: IPCSession) -> None:
    raw = await RawConnection.open(session)
    await raw.send(struct.pack(">I", MAX_MESSAGE_SIZE + 1) + b"{}")
    answer = await raw.receive()
    assert answer is not None
    assert answer["error"] == {
        "message": f"IPC message of {MAX_MESSAGE_SIZE + 1} bytes exceeds the limit of {MAX_MESSAGE_SIZE} "
        "bytes (MAX_MESSAGE_SIZE)",
        "type": "IPCMessageSizeError",
    }
    assert await raw.receive() is None
    await raw.close()


async def test_truncated_frame_closes_only_that_connection(
    session: IPCSession, client: IPCClient, loop_errors: list[dict[str, object]]
) -> None:
    raw = await RawConnection.open(session)
    await raw.send(struct.pack(">I", 100) + b"{partial")
    await raw.close()
    assert await client.call_tool("echo", {"text": "alive"}) == text_result("alive")
    assert loop_errors == []


async def test_crashed_bridge_mid_call_cancels_the_call_and_the_session_survives(
    toolbox: Toolbox,
    session: IPCSession,
    loop_errors: list[dict[str, object]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    raw = await RawConnection.open(session)
    await raw.send(encode_message({"id": 1, "method": "call_tool", "params": {"name": "block", "arguments": {}}}))
    await asyncio.wait_for(toolbox.started.wait(), 10)
    with caplog.at_level(logging.WARNING):
        raw.writer.transport.abort()  # like a bridge killed with SIGKILL
        await asyncio.wait_for(toolbox.cancelled.wait(), 10)
    assert "1 tool calls in flight" in caplog.text
    async with await IPCClient.connect(session.socket_path, session.secret) as client:
        assert await client.call_tool("echo", {"text": "alive"}) == text_result("alive")
    assert loop_errors == []


async def test_cancelling_a_client_call_cancels_the_tool(toolbox: Toolbox, client: IPCClient) -> None:
    call = asyncio.create_task(client.call_tool("block", {}))
    await asyncio.wait_for(toolbox.started.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.wait_for(toolbox.cancelled.wait(), 10)
    assert await client.call_tool("echo", {"text": "next"}) == text_result("next")


async def test_stop_with_calls_in_flight_cancels_them_and_fails_the_caller(toolbox: Toolbox) -> None:
    session = toolbox.session()
    await session.start()
    client = await IPCClient.connect(session.socket_path, session.secret)
    call = asyncio.create_task(client.call_tool("block", {}))
    await asyncio.wait_for(toolbox.started.wait(), 10)
    await session.stop()
    assert toolbox.cancelled.is_set()
    with pytest.raises(IPCConnectionError, match="IPC connection failed"):
        await call
    with pytest.raises(IPCConnectionError):
        await client.call_tool("echo", {"text": "too late"})
    await client.aclose()
    with pytest.raises(IPCConnectionError, match="cannot connect"):
        await IPCClient.connect(session.socket_path, session.secret)


async def test_tool_raising_cancelled_error_by_itself_is_an_error_not_a_hang() -> None:
    async def confused(arguments: dict[str, object]) -> dict[str, object]:
        raise asyncio.CancelledError

    schema: ToolSchema = {"name": "confused", "description": "", "input_schema": {"type": "object"}}
    async with (
        IPCSession({"confused": confused}, [schema]) as session,
        await IPCClient.connect(session.socket_path, session.secret) as client,
    ):
        with pytest.raises(IPCToolExecutionError, match="was cancelled"):
            await asyncio.wait_for(client.call_tool("confused", {}), 10)


async def test_cancel_of_an_unknown_call_is_ignored(session: IPCSession) -> None:
    raw = await RawConnection.open(session)
    await raw.send(encode_message({"method": "cancel", "params": {"id": 42}}))
    await raw.send(
        encode_message({"id": 1, "method": "call_tool", "params": {"name": "echo", "arguments": {"text": "a"}}})
    )
    assert await raw.receive() == {"id": 1, "result": text_result("a")}
    await raw.close()


async def test_client_connect_errors() -> None:
    with pytest.raises(IPCConnectionError, match="cannot connect"):
        await IPCClient.connect("/nonexistent/claudecode_ipc_x.sock", "secret")


async def test_server_closing_an_idle_connection_fails_later_calls(session: IPCSession) -> None:
    # A bridge-side view: once the server is gone, the client says so with IPCConnectionError.
    client = await IPCClient.connect(session.socket_path, session.secret)
    await session.stop()
    with pytest.raises(IPCConnectionError):
        await client.call_tool("echo", {"text": "x"})
    await client.aclose()
