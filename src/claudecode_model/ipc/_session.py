"""The parent side of the IPC bridge: a Unix socket server that runs tool calls for the bridge process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import tempfile
import uuid
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Self

from claudecode_model._process import platform
from claudecode_model.exceptions import (
    BridgeStartupError,
    IPCMessageSizeError,
    IPCToolExecutionError,
    ToolNotFoundError,
    ToolValidationError,
)
from claudecode_model.ipc._constants import (
    DIRECTORY_MODE,
    HELLO_MAX_SIZE,
    SCHEMA_FILE_PREFIX,
    SOCKET_FILE_PREFIX,
    SOCKET_FILE_SUFFIX,
    SOCKET_PERMISSIONS,
)
from claudecode_model.ipc._framing import (
    FrameError,
    FrameSizeError,
    MessageFormatError,
    decode_message,
    encode_message,
)
from claudecode_model.ipc._leftovers import directory_prefix, remove_dead_leftovers
from claudecode_model.ipc._protocol import (
    error_response,
    hello_response,
    normalize_tool_result,
    parse_tool_schemas,
    tool_result_response,
)
from claudecode_model.ipc._streams import read_frame

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

    from claudecode_model.ipc._types import (
        IPCErrorResponse,
        IPCHelloResponse,
        IPCResponse,
        MetaToolHandler,
        ToolHandler,
        ToolResult,
        ToolSchema,
    )

__all__ = ["IPCSession", "IPCSessionState"]

logger = logging.getLogger(__name__)

_MAX_SOCKET_PATH = platform.MAX_SOCKET_PATH
"""Longest path an AF_UNIX address can hold (``sun_path`` minus its terminating NUL): 103 bytes on macOS."""

PROTOCOL_ERROR = "IPCProtocolError"
AUTHENTICATION_ERROR = "IPCAuthenticationError"


class IPCSessionState(Enum):
    """Lifecycle of an ``IPCSession``: CREATED → STARTED → STOPPED (STOPPED also after a failed start)."""

    CREATED = "created"
    STARTED = "started"
    STOPPED = "stopped"


def _peer_credentials(sock: object) -> tuple[int | None, int] | None:
    """(pid, uid) of the process at the other end of a Unix socket: ``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED``
    (``getpeereid()``) on macOS; the pid is ``None`` where the platform does not tell it."""
    if getattr(sock, "getsockopt", None) is None:
        return None
    return platform.peer_credentials(sock)  # a socket, or asyncio's wrapper of one


def _socket_base_directory(name_length: int) -> str:
    """The temp dir, or /tmp where the temp dir's path would make the socket path too long for AF_UNIX."""
    # mkdtemp adds 8 random characters to the prefix.
    needed = len(directory_prefix()) + 8 + 2 + name_length
    for base in (tempfile.gettempdir(), "/tmp"):
        if len(os.fsencode(base)) + needed <= _MAX_SOCKET_PATH and os.path.isdir(base):
            return base
    raise BridgeStartupError(
        f"no temporary directory gives a Unix socket path of at most {_MAX_SOCKET_PATH} bytes; "
        "set TMPDIR to a shorter path"
    )


@dataclass(frozen=True)
class _Files:
    """The files of a started session: a private directory holding the Unix socket and the tool schema file."""

    directory: Path
    socket_path: Path
    schema_path: Path

    @classmethod
    def create_directory(cls, session_id: str) -> _Files:
        """Create the directory (only its owner has access; the session creates the files) and name the files."""
        socket_name = f"{SOCKET_FILE_PREFIX}{session_id}{SOCKET_FILE_SUFFIX}"
        base = _socket_base_directory(len(socket_name))
        remove_dead_leftovers(base)
        directory = Path(tempfile.mkdtemp(prefix=directory_prefix(), dir=base))
        return cls(directory, directory / socket_name, directory / f"{SCHEMA_FILE_PREFIX}{session_id}.json")

    def remove(self) -> None:
        """Remove whichever of the files exist, then the directory."""
        for path in (self.schema_path, self.socket_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        try:
            self.directory.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            logger.warning("could not remove the IPC directory %s", self.directory, exc_info=True)


class _Connection:
    """One accepted connection (normally one bridge process) and the calls running for it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.calls: dict[int, asyncio.Task[None]] = {}
        self.peer = "unknown process"
        self._write_lock = asyncio.Lock()

    async def send(self, frame: bytes) -> None:
        async with self._write_lock:
            if self.writer.is_closing():
                raise ConnectionResetError("the IPC connection is closed")
            self.writer.write(frame)
            await self.writer.drain()

    async def close(self) -> None:
        current = asyncio.current_task()
        calls = [task for task in self.calls.values() if task is not current]
        for task in calls:
            task.cancel()
        if calls:
            await asyncio.gather(*calls, return_exceptions=True)
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


class IPCSession:
    """Serves tool calls from IPC bridge processes over a private Unix socket.

    ``start()`` creates a private directory (0700) in the temp dir holding the tool schema file and the socket
    (both 0600), and starts serving; ``stop()`` closes every connection, cancels the calls in flight and
    removes the files. Also an async context manager. A connection must come from the same user (checked with
    ``SO_PEERCRED`` where available) and open with the session secret (``secret``, handed to the bridge
    through its environment by ``stdio_server_config()``); anything else is refused and logged.

    ``tool_handlers`` receive the arguments; ``meta_tool_handlers`` also receive the ``_meta`` object of the
    call (see ``tool_use_id()``). Every tool in ``tool_schemas`` needs exactly one handler, and vice versa.
    """

    def __init__(
        self,
        tool_handlers: Mapping[str, ToolHandler],
        tool_schemas: Sequence[ToolSchema],
        *,
        meta_tool_handlers: Mapping[str, MetaToolHandler] | None = None,
        handshake_timeout: float = 10.0,
    ) -> None:
        try:
            self._schemas = parse_tool_schemas(list(tool_schemas))
        except ValueError as exc:
            raise ToolValidationError(str(exc)) from None
        self._handlers = dict(tool_handlers)
        self._meta_handlers = dict(meta_tool_handlers or {})
        both = self._handlers.keys() & self._meta_handlers.keys()
        if both:
            raise ToolValidationError(f"tools with two handlers: {sorted(both)}")
        handled = self._handlers.keys() | self._meta_handlers.keys()
        listed = {schema["name"] for schema in self._schemas}
        if handled != listed:
            raise ToolValidationError(
                f"tool handlers and schemas differ: no handler for {sorted(listed - handled)}, "
                f"no schema for {sorted(handled - listed)}"
            )
        self._handshake_timeout = handshake_timeout
        self._secret = secrets.token_hex(32)
        self._state = IPCSessionState.CREATED
        self._files: _Files | None = None
        """Set by ``start()`` once it created the directory; kept after ``stop()`` removed the files."""
        self._server: asyncio.Server | None = None
        self._connection_tasks: dict[asyncio.Task[None], _Connection] = {}
        self._calls_completed = 0

    # --- public state ---------------------------------------------------------------------------------------

    @property
    def state(self) -> IPCSessionState:
        """Where the session is in its lifecycle."""
        return self._state

    @property
    def socket_path(self) -> Path:
        """Path of the Unix socket (set by ``start()``)."""
        return self._started_files().socket_path

    @property
    def schema_path(self) -> Path:
        """Path of the tool schema file (set by ``start()``)."""
        return self._started_files().schema_path

    @property
    def directory(self) -> Path:
        """The private directory holding the socket and the schema file (set by ``start()``)."""
        return self._started_files().directory

    def _started_files(self) -> _Files:
        if self._files is None:
            raise RuntimeError("the IPC session has not been started")
        return self._files

    @property
    def secret(self) -> str:
        """The per-session secret a bridge must present; keep it out of logs and command lines."""
        return self._secret

    @property
    def tool_schemas(self) -> list[ToolSchema]:
        """The tools the bridge lists."""
        return list(self._schemas)

    @property
    def connection_count(self) -> int:
        """Number of open connections (authenticated or not yet)."""
        return len(self._connection_tasks)

    @property
    def calls_completed(self) -> int:
        """Number of tool calls answered so far (successes and errors)."""
        return self._calls_completed

    # --- lifecycle ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create the files and start serving; on any failure everything is removed again.

        Raises ``BridgeStartupError`` when the directory, the schema file or the socket cannot be created, and
        ``RuntimeError`` when the session was already started.
        """
        if self._state is not IPCSessionState.CREATED:
            raise RuntimeError(f"an IPC session can be started only once (it is {self._state.value})")
        self._state = IPCSessionState.STARTED
        try:
            await self._start()
        except BaseException as exc:
            await self.stop()
            if isinstance(exc, OSError):
                raise BridgeStartupError(f"cannot start the IPC server: {exc}") from exc
            raise

    async def _start(self) -> None:
        files = self._files = _Files.create_directory(uuid.uuid4().hex)
        os.chmod(files.directory, DIRECTORY_MODE)
        self._write_schema_file(files.schema_path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(files.socket_path))
            os.chmod(files.socket_path, SOCKET_PERMISSIONS)
            self._server = await asyncio.start_unix_server(self._serve_connection, sock=listener)
        except BaseException:
            listener.close()
            raise
        logger.debug("IPC session serving %d tools on %s", len(self._schemas), files.socket_path)

    def _write_schema_file(self, path: Path) -> None:
        data = json.dumps(self._schemas, ensure_ascii=False).encode("utf-8")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, SOCKET_PERMISSIONS)
        with open(fd, "wb") as schema_file:
            os.fchmod(fd, SOCKET_PERMISSIONS)
            schema_file.write(data)

    async def stop(self) -> None:
        """Stop serving, cancel the calls in flight and remove the socket, the schema file and the directory.

        Safe to call in any state and more than once.
        """
        files = self._files
        removed = files is None or not files.directory.exists()
        if self._state is IPCSessionState.STOPPED and self._server is None and removed:
            return
        self._state = IPCSessionState.STOPPED
        server, self._server = self._server, None
        if server is not None:
            server.close()
        if files is not None:
            with contextlib.suppress(FileNotFoundError):
                files.socket_path.unlink()
        current = asyncio.current_task()
        tasks = [task for task in self._connection_tasks if task is not current]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        self._remove_files()

    def _remove_files(self) -> None:
        if self._files is not None:
            self._files.remove()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --- serving --------------------------------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(reader, writer)
        task = asyncio.current_task()
        if self._state is not IPCSessionState.STARTED or task is None:
            writer.close()
            return
        self._connection_tasks[task] = connection
        try:
            if self._accept_peer(connection) and await self._authenticate(connection):
                await self._serve_calls(connection)
        except (FrameError, OSError) as exc:
            logger.warning("IPC connection from %s failed: %s", connection.peer, exc)
        finally:
            if connection.calls:
                logger.warning(
                    "IPC connection from %s closed with %d tool calls in flight; cancelling them",
                    connection.peer,
                    len(connection.calls),
                )
            del self._connection_tasks[task]
            await connection.close()

    def _accept_peer(self, connection: _Connection) -> bool:
        try:
            credentials = _peer_credentials(connection.writer.get_extra_info("socket"))
        except OSError as exc:
            logger.warning("refused an IPC connection: cannot read the peer's credentials (%s)", exc)
            return False
        if credentials is None:
            return True  # the private directory (0700) and the secret still guard the socket
        pid, uid = credentials
        connection.peer = f"pid {pid}" if pid is not None else "a peer of unknown pid"
        if uid != os.geteuid():
            logger.warning(
                "refused an IPC connection from %s: uid %d is not our uid %d", connection.peer, uid, os.geteuid()
            )
            return False
        return True

    async def _authenticate(self, connection: _Connection) -> bool:
        try:
            async with asyncio.timeout(self._handshake_timeout):
                body = await read_frame(connection.reader, HELLO_MAX_SIZE)
        except TimeoutError:
            logger.warning("refused an IPC connection from %s: no authentication within the timeout", connection.peer)
            return False
        except FrameError as exc:
            logger.warning("refused an IPC connection from %s: %s", connection.peer, exc)
            return False
        if body is None:
            logger.debug("IPC connection from %s closed before authenticating", connection.peer)
            return False
        try:
            message = decode_message(body)
        except MessageFormatError as exc:
            logger.warning("refused an IPC connection from %s: %s", connection.peer, exc)
            return False
        params = message.get("params")
        secret = params.get("secret") if message.get("method") == "hello" and isinstance(params, dict) else None
        if not isinstance(secret, str) or not secrets.compare_digest(
            secret.encode("utf-8", "surrogatepass"), self._secret.encode("ascii")
        ):
            logger.warning("refused an IPC connection from %s: missing or wrong session secret", connection.peer)
            refusal = error_response(None, "authentication failed", AUTHENTICATION_ERROR)
            with contextlib.suppress(OSError):
                await connection.send(encode_message(refusal))
            return False
        accepted: IPCHelloResponse = hello_response()
        await connection.send(encode_message(accepted))
        logger.debug("IPC bridge connected from %s", connection.peer)
        return True

    async def _serve_calls(self, connection: _Connection) -> None:
        while True:
            try:
                body = await read_frame(connection.reader)
            except FrameSizeError as exc:
                logger.warning("closing the IPC connection from %s: %s", connection.peer, exc)
                with contextlib.suppress(OSError):
                    await connection.send(encode_message(error_response(None, str(exc), "IPCMessageSizeError")))
                return
            if body is None:
                return
            try:
                message = decode_message(body)
            except MessageFormatError as exc:
                logger.warning("unreadable IPC message from %s: %s", connection.peer, exc)
                await connection.send(encode_message(error_response(None, str(exc), PROTOCOL_ERROR)))
                continue
            await self._dispatch(connection, message)

    async def _dispatch(self, connection: _Connection, message: dict[str, object]) -> None:
        message_id = message.get("id")
        call_id = message_id if isinstance(message_id, int) and not isinstance(message_id, bool) else None
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        match message.get("method"):
            case "call_tool":
                problem = self._check_call(connection, call_id, params)
                if problem is not None:
                    await connection.send(encode_message(error_response(call_id, problem, PROTOCOL_ERROR)))
                    return
                assert call_id is not None
                task = asyncio.create_task(self._run_call(connection, call_id, params))
                connection.calls[call_id] = task
                task.add_done_callback(lambda _: connection.calls.pop(call_id, None))
            case "cancel":
                target = params.get("id")
                running = connection.calls.get(target) if isinstance(target, int) else None
                if running is not None:
                    running.cancel()
            case method:
                problem = f"unknown IPC method {method!r}"
                await connection.send(encode_message(error_response(call_id, problem, PROTOCOL_ERROR)))

    @staticmethod
    def _check_call(connection: _Connection, call_id: int | None, params: dict[str, object]) -> str | None:
        if call_id is None:
            return "call_tool needs an integer id"
        if call_id in connection.calls:
            return f"call id {call_id} is already in use"
        if not isinstance(params.get("name"), str):
            return "call_tool needs a tool name"
        if not isinstance(params.get("arguments", {}), dict):
            return "call_tool arguments must be an object"
        if not isinstance(params.get("meta", {}), dict):
            return "call_tool meta must be an object"
        return None

    async def _run_call(self, connection: _Connection, call_id: int, params: dict[str, object]) -> None:
        name = str(params["name"])
        response: IPCResponse | IPCErrorResponse
        try:
            response = tool_result_response(call_id, await self._invoke(name, params))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            # The tool raised CancelledError without being cancelled itself: an error like any other.
            response = error_response(call_id, f"tool {name!r} was cancelled", "CancelledError")
        except Exception as exc:
            logger.debug("tool %r raised", name, exc_info=True)
            response = error_response(call_id, str(exc) or type(exc).__name__, type(exc).__name__)
        try:
            frame = encode_message(response)
        except FrameSizeError as exc:
            too_large = IPCMessageSizeError(f"the result of tool {name!r} is too large: {exc}")
            frame = encode_message(error_response(call_id, str(too_large), type(too_large).__name__))
        try:
            await connection.send(frame)
        except OSError as exc:
            logger.debug("could not deliver the result of tool %r to %s: %s", name, connection.peer, exc)
            return
        self._calls_completed += 1

    async def _invoke(self, name: str, params: dict[str, object]) -> ToolResult:
        raw_arguments = params.get("arguments")
        arguments: dict[str, object] = dict(raw_arguments) if isinstance(raw_arguments, dict) else {}
        handler = self._handlers.get(name)
        if handler is not None:
            raw = await handler(arguments)
        else:
            meta_handler = self._meta_handlers.get(name)
            if meta_handler is None:
                raise ToolNotFoundError(f"Tool '{name}' not found", missing_tools=[name])
            raw_meta = params.get("meta")
            raw = await meta_handler(arguments, dict(raw_meta) if isinstance(raw_meta, dict) else {})
        try:
            return normalize_tool_result(raw)
        except ValueError as exc:
            raise IPCToolExecutionError(f"tool {name!r} returned an invalid result: {exc}") from None
