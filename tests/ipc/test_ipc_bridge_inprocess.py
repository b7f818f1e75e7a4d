"""The bridge's loop run in a thread against hand-made servers: misbehaving parents and edge cases."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import tempfile
import threading
from typing import TYPE_CHECKING

import pytest

from claudecode_model.ipc import MAX_MESSAGE_SIZE, bridge
from claudecode_model.ipc._framing import FrameDecoder, decode_message, encode_message

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    Behaviour = Callable[[dict[str, object], asyncio.StreamWriter], Awaitable[None]]

TOOLS: list[dict[str, object]] = [{"name": "echo", "description": "", "inputSchema": {"type": "object"}}]


class ThreadBridge:
    """A ``bridge.Bridge`` on pipes, its loop in a thread; speaks JSON-RPC lines like the subprocess."""

    def __init__(self, socket_path: str) -> None:
        stdin_read, self._stdin_write = os.pipe()
        self._stdout_read, stdout_write = os.pipe()
        self._fds = [stdin_read, stdout_write]
        self.bridge = bridge.Bridge(socket_path, TOOLS, "the-secret", stdin_fd=stdin_read, stdout_fd=stdout_write)
        self._stdout = os.fdopen(self._stdout_read, "rb")
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.bridge.run()
        except bridge._Shutdown:
            pass
        finally:
            self.bridge.close()
            self.ended.set()

    async def send(self, data: bytes) -> None:
        await asyncio.to_thread(os.write, self._stdin_write, data)

    async def receive(self) -> dict[str, object]:
        line = await asyncio.wait_for(asyncio.to_thread(self._stdout.readline), 10)
        assert line, "the bridge closed its stdout"
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    async def request(self, request_id: int, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
        message: dict[str, object] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(json.dumps(message).encode() + b"\n")
        return await self.receive()

    async def close(self) -> None:
        os.close(self._stdin_write)
        assert await asyncio.to_thread(self.ended.wait, 10)
        self._thread.join()
        self._stdout.close()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)


class FakeParent:
    """A Unix socket server standing in for ``IPCSession``, with a scripted answer to each call."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.connections = 0
        self.received: list[dict[str, object]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for body in decoder.feed(data):
                    message = decode_message(body)
                    self.received.append(message)
                    await self.behaviour(message, writer)
        finally:
            writer.close()


async def authenticate_then(answer: Callable[[dict[str, object]], bytes | None]) -> Behaviour:
    async def behaviour(message: dict[str, object], writer: asyncio.StreamWriter) -> None:
        if message.get("method") == "hello":
            writer.write(encode_message({"id": 0, "result": {"authenticated": True}}))
        else:
            reply = answer(message)
            if reply is not None:
                writer.write(reply)
        await writer.drain()

    return behaviour


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]]]:
    directory = tempfile.mkdtemp(prefix="ipc_test_")
    servers: list[asyncio.Server] = []

    async def start(behaviour: Behaviour) -> tuple[FakeParent, str]:
        parent = FakeParent(behaviour)
        path = os.path.join(directory, f"s{len(servers)}.sock")
        servers.append(await asyncio.start_unix_server(parent.handle, path))
        return parent, path

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


def call(request_id: int, **arguments: object) -> dict[str, object]:
    return {"name": "echo", "arguments": arguments}


async def test_a_server_that_never_authenticates_is_given_up(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bridge, "HELLO_TIMEOUT", 0.3)

    async def silent(message: dict[str, object], writer: asyncio.StreamWriter) -> None:
        return None

    _, path = await serve(silent)
    driver = ThreadBridge(path)
    try:
        answer = await driver.request(1, "tools/call", call(1))
        assert answer["result"] == {
            "content": [
                {
                    "type": "text",
                    "text": "IPC connection failed: the IPC server did not answer the authentication",
                }
            ],
            "isError": True,
        }
    finally:
        await driver.close()


async def test_a_bad_frame_from_the_server_fails_the_call_and_the_bridge_reconnects(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]],
) -> None:
    replies = iter([struct.pack(">I", 0xFFFFFFFF), None])

    def answer(message: dict[str, object]) -> bytes | None:
        reply = next(replies)
        return reply if reply is not None else encode_message({"id": message["id"], "result": {"content": []}})

    parent, path = await serve(await authenticate_then(answer))
    driver = ThreadBridge(path)
    try:
        first = await driver.request(1, "tools/call", call(1))
        text = first["result"]["content"][0]["text"]  # type: ignore[index]
        assert text == (
            "IPC connection failed: the IPC server sent a bad frame: IPC message of 4294967295 bytes exceeds "
            f"the limit of {MAX_MESSAGE_SIZE} bytes (MAX_MESSAGE_SIZE)"
        )
        second = await driver.request(2, "tools/call", call(2))
        assert second["result"] == {"content": [], "isError": False}
        assert parent.connections == 2
    finally:
        await driver.close()


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ({"result": {"content": "nope"}}, "IPC protocol error: a tool result needs a 'content' list"),
        ({"error": {"message": "", "type": "WeirdError"}}, "WeirdError"),
        ({"error": {"type": None}}, "the tool failed without a message"),
    ],
)
async def test_odd_answers_from_the_server_become_error_results(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]], reply: dict[str, object], text: str
) -> None:
    _, path = await serve(await authenticate_then(lambda message: encode_message({"id": message["id"], **reply})))
    driver = ThreadBridge(path)
    try:
        answer = await driver.request(1, "tools/call", call(1))
        assert answer["result"] == {"content": [{"type": "text", "text": text}], "isError": True}
    finally:
        await driver.close()


async def test_answers_to_unknown_calls_and_garbage_from_the_server_are_ignored(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]],
) -> None:
    def answer(message: dict[str, object]) -> bytes:
        return (
            encode_message({"id": 999, "result": {"content": []}})
            + struct.pack(">I", 3)
            + b"{x}"
            + encode_message({"id": None, "error": {"message": "unrelated", "type": "IPCProtocolError"}})
            + encode_message({"id": message["id"], "result": {"content": [{"type": "text", "text": "real"}]}})
        )

    _, path = await serve(await authenticate_then(answer))
    driver = ThreadBridge(path)
    try:
        answer_message = await driver.request(1, "tools/call", call(1))
        assert answer_message["result"] == {"content": [{"type": "text", "text": "real"}], "isError": False}
    finally:
        await driver.close()


async def test_overlong_json_rpc_lines_are_refused_and_skipped(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bridge, "STDIN_LINE_LIMIT", 1000)
    _, path = await serve(await authenticate_then(lambda message: None))
    driver = ThreadBridge(path)
    try:
        await driver.send(b"x" * 3000)
        assert await driver.receive() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "JSON-RPC message too large"},
        }
        await driver.send(b"y" * 3000 + b"\n")
        assert (await driver.request(7, "ping"))["result"] == {}
    finally:
        await driver.close()


async def test_arguments_too_large_for_ipc_are_an_error_result(
    serve: Callable[[Behaviour], Awaitable[tuple[FakeParent, str]]],
) -> None:
    parent, path = await serve(await authenticate_then(lambda message: None))
    driver = ThreadBridge(path)
    try:
        answer = await driver.request(1, "tools/call", call(1, text="z" * MAX_MESSAGE_SIZE))
        text = answer["result"]["content"][0]["text"]  # type: ignore[index]
        assert text.startswith("IPC message too large: IPC message of ")
        assert [m.get("method") for m in parent.received] == ["hello"]
    finally:
        await driver.close()
