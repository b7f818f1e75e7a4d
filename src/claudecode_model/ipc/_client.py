"""A parent-side client of an ``IPCSession``: calls tools over the socket as the bridge does.

For diagnostics, benchmarks and tests of the transport without the CLI. Errors are the library's own:
``IPCConnectionError`` when the server cannot be reached, refuses us or goes away, ``IPCMessageSizeError``
when a message is too large, ``IPCToolExecutionError`` when the tool failed (its message is the tool's
message).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import TYPE_CHECKING

from claudecode_model.exceptions import IPCConnectionError, IPCMessageSizeError, IPCToolExecutionError
from claudecode_model.ipc._framing import FrameError, FrameSizeError, MessageFormatError, decode_message, encode_message
from claudecode_model.ipc._protocol import HELLO_ID, call_request, cancel_request, hello_request, normalize_tool_result
from claudecode_model.ipc._streams import read_frame

if TYPE_CHECKING:
    from pathlib import Path

    from claudecode_model.ipc._types import JsonValue, ToolResult

__all__ = ["IPCClient"]


def _error_from(payload: object) -> Exception:
    message = payload.get("message") if isinstance(payload, dict) else None
    error_type = payload.get("type") if isinstance(payload, dict) else None
    text = message if isinstance(message, str) and message else str(error_type or "unknown IPC error")
    error: Exception = IPCMessageSizeError(text) if error_type == "IPCMessageSizeError" else IPCToolExecutionError(text)
    if isinstance(error_type, str):
        error.add_note(f"error type: {error_type}")
    return error


class IPCClient(contextlib.AbstractAsyncContextManager["IPCClient"]):
    """An authenticated connection to an ``IPCSession``; several calls may run at once."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Use ``IPCClient.connect()``."""
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(HELLO_ID + 1)
        self._pending: dict[int, asyncio.Future[ToolResult]] = {}
        self._closed_because: str | None = None
        self._reader_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, socket_path: str | Path, secret: str, *, timeout: float = 5.0) -> IPCClient:  # noqa: ASYNC109
        """Connect and authenticate; raise ``IPCConnectionError`` if that fails."""
        path = str(socket_path)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        except (OSError, TimeoutError) as exc:
            raise IPCConnectionError(f"cannot connect to the IPC server at {path}: {exc}") from exc
        client = cls(reader, writer)
        try:
            async with asyncio.timeout(timeout):
                await client._handshake(secret)
        except BaseException as exc:
            await client.aclose()
            if isinstance(exc, TimeoutError):
                raise IPCConnectionError("the IPC server did not answer the authentication") from exc
            raise
        client._reader_task = asyncio.create_task(client._read_responses())
        return client

    async def _handshake(self, secret: str) -> None:
        try:
            self._writer.write(encode_message(hello_request(secret)))
            await self._writer.drain()
            body = await read_frame(self._reader)
        except (OSError, FrameError) as exc:
            raise IPCConnectionError(f"the IPC connection failed during authentication: {exc}") from exc
        if body is None:
            raise IPCConnectionError("the IPC server closed the connection during authentication")
        try:
            message = decode_message(body)
        except MessageFormatError as exc:
            raise IPCConnectionError(f"the IPC server sent an unreadable answer: {exc}") from exc
        result = message.get("result")
        if message.get("id") == HELLO_ID and isinstance(result, dict) and result.get("authenticated") is True:
            return
        reason = _error_from(message.get("error"))
        raise IPCConnectionError(f"the IPC server refused the connection: {reason}")

    async def call_tool(
        self, name: str, arguments: dict[str, JsonValue], meta: dict[str, JsonValue] | None = None
    ) -> ToolResult:
        """Run a tool in the parent and return its result (``isError`` results are returned, not raised)."""
        if self._closed_because is not None:
            raise IPCConnectionError(f"IPC connection failed: {self._closed_because}")
        call_id = next(self._ids)
        try:
            frame = encode_message(call_request(call_id, name, arguments, meta))
        except FrameSizeError as exc:
            raise IPCMessageSizeError(str(exc)) from None
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            self._writer.write(frame)
            await self._writer.drain()
            return await future
        except OSError as exc:
            raise IPCConnectionError(f"IPC connection failed: {exc}") from exc
        except asyncio.CancelledError:
            if not self._writer.is_closing():
                self._writer.write(encode_message(cancel_request(call_id)))
            raise
        finally:
            self._pending.pop(call_id, None)

    async def _read_responses(self) -> None:
        reason = "the IPC server closed the connection"
        try:
            while True:
                body = await read_frame(self._reader)
                if body is None:
                    break
                self._deliver(body)
        except (OSError, FrameError) as exc:
            reason = f"the IPC connection broke: {exc}"
        finally:
            self._fail_pending(reason)

    def _deliver(self, body: bytes) -> None:
        try:
            message = decode_message(body)
        except MessageFormatError:
            return
        call_id = message.get("id")
        future = self._pending.get(call_id) if isinstance(call_id, int) else None
        if future is None or future.done():
            return
        if "error" in message:
            future.set_exception(_error_from(message["error"]))
            return
        try:
            future.set_result(normalize_tool_result(message.get("result")))
        except ValueError as exc:
            future.set_exception(IPCConnectionError(f"the IPC server sent an invalid result: {exc}"))

    def _fail_pending(self, reason: str) -> None:
        self._closed_because = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(IPCConnectionError(f"IPC connection failed: {reason}"))

    async def aclose(self) -> None:
        """Close the connection; calls still waiting fail with ``IPCConnectionError``."""
        if self._closed_because is None:
            self._fail_pending("the client was closed")
        task, self._reader_task = self._reader_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
