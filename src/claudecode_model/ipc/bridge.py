"""The IPC bridge: ``python -m claudecode_model.ipc.bridge <socket_path> <schema_path>``.

A minimal MCP stdio server (newline-delimited JSON-RPC 2.0 on stdin/stdout) that the Claude Code CLI starts.
It answers the handshake and ``tools/list`` itself, from the schema file read at start, and forwards each
``tools/call`` over the session's Unix socket to the parent Python process, which runs the tool. Several calls
may be in flight.

Start-up cost matters (the CLI waits for every MCP server), so this module and everything it imports use the
standard library only, without asyncio: one thread, one ``selectors`` loop over stdin and the socket.

The bridge exits, quietly and with status 0, when stdin closes, on SIGINT/SIGTERM, when its parent process is
gone, and when an established connection to the parent drops and cannot be re-established. It exits with
status 2 when started wrongly (arguments, missing secret, unreadable schema file). If the socket cannot be
reached, a ``tools/call`` is answered with an ``isError`` result "IPC connection failed: ...".
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import time

from claudecode_model.ipc._constants import MAX_MESSAGE_SIZE, SECRET_ENV_VAR
from claudecode_model.ipc._framing import (
    FrameDecoder,
    FrameError,
    FrameSizeError,
    MessageFormatError,
    decode_message,
    encode_message,
)
from claudecode_model.ipc._protocol import (
    HELLO_ID,
    call_request,
    cancel_request,
    hello_request,
    normalize_tool_result,
    parse_tool_schemas,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

    from mcp.types import Tool

    from claudecode_model.ipc._types import JsonValue, ToolResult, ToolSchema

__all__ = ["Bridge", "load_schemas", "load_tools", "main", "schemas_to_mcp_tools"]

SERVER_NAME = "claudecode-model-ipc-bridge"
SERVER_VERSION = "1.0.0"
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""MCP versions negotiated through ``initialize``; the bridge uses no feature that differs between them."""

PARENT_POLL_INTERVAL = 0.25
CONNECT_TIMEOUT = 2.0
HELLO_TIMEOUT = 10.0
READ_CHUNK = 1 << 16
STDIN_LINE_LIMIT = 2 * MAX_MESSAGE_SIZE
"""Longest JSON-RPC line accepted from the CLI; a ``tools/call`` beyond it could not be forwarded anyway."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

_STDIN = "stdin"
_SOCKET = "socket"


class _Shutdown(Exception):
    """Ends the main loop (stdin closed, signal, parent gone, connection lost for good)."""


def _log(message: str) -> None:
    """Diagnostics for the CLI's MCP server log (stderr); never fails."""
    with contextlib.suppress(OSError):
        os.write(2, f"[{SERVER_NAME}] {message}\n".encode("utf-8", "replace"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _to_json_line(message: dict[str, object]) -> bytes:
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def load_schemas(schema_path: str | os.PathLike[str]) -> list[ToolSchema]:
    """Read and check the schema file; raise ``OSError``/``ValueError`` if unusable."""
    with open(schema_path, "rb") as schema_file:
        raw = schema_file.read()
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"the tool schema file is not valid JSON: {exc}") from None
    return parse_tool_schemas(value)


def load_tools(schema_path: str) -> list[dict[str, object]]:
    """Read the schema file and build the ``tools/list`` entries; raise ``OSError``/``ValueError`` if
    unusable."""
    return [_wire_tool(schema) for schema in load_schemas(schema_path)]


def schemas_to_mcp_tools(schemas: list[ToolSchema]) -> list[Tool]:
    """The schemas as mcp ``Tool`` objects (imports mcp: not used by the bridge process itself)."""
    from mcp.types import Tool

    return [Tool.model_validate(_wire_tool(schema)) for schema in schemas]


def _wire_tool(schema: ToolSchema) -> dict[str, object]:
    tool: dict[str, object] = {
        "name": schema["name"],
        "description": schema["description"],
        "inputSchema": schema["input_schema"],
    }
    if "annotations" in schema:
        tool["annotations"] = schema["annotations"]
    if "meta" in schema:
        tool["_meta"] = schema["meta"]
    return tool


def _error_text(prefix: str, detail: str) -> ToolResult:
    return {"content": [{"type": "text", "text": f"{prefix}{detail}"}], "isError": True}


class _Connection:
    """The socket to the parent and what is buffered on it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.decoder = FrameDecoder()
        self.outgoing = bytearray()
        self.authenticated = False
        self.hello_deadline = time.monotonic() + HELLO_TIMEOUT


class Bridge:
    """The bridge's state and event loop (one per process)."""

    def __init__(self, socket_path: str, tools: list[dict[str, object]], secret: str, stdin_fd: int = 0,
                 stdout_fd: int = 1) -> None:  # fmt: skip
        self._socket_path = socket_path
        self._tools = tools
        self._secret = secret
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        # poll(), unlike epoll, also accepts a stdin that is a regular file or /dev/null.
        self._selector: selectors.BaseSelector = (
            selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.SelectSelector()
        )
        self._connection: _Connection | None = None
        self._next_id = HELLO_ID + 1
        self._pending: dict[int, JsonValue] = {}
        """IPC request id -> JSON-RPC id of the ``tools/call`` waiting for it."""
        self._stdin_buffer = bytearray()
        self._stdin_scanned = 0
        self._discarding_line = False
        self._parent_pid = os.getppid()

    # --- the loop -------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Serve until stdin closes or another reason to stop comes (raises ``_Shutdown``)."""
        self._selector.register(self._stdin_fd, selectors.EVENT_READ, _STDIN)
        error = self._connect()
        if error is not None:
            _log(f"IPC server not reachable yet: {error}")
        while True:
            for key, events in self._selector.select(self._timeout()):
                if key.data == _STDIN:
                    self._on_stdin()
                elif self._connection is not None and key.fileobj is self._connection.sock:
                    self._on_socket(events)
            self._check_parent()
            self._check_hello_deadline()

    def close(self) -> None:
        """Release the socket and the selector."""
        if self._connection is not None:
            self._connection.sock.close()
            self._connection = None
        self._selector.close()

    def _timeout(self) -> float:
        timeout = PARENT_POLL_INTERVAL
        connection = self._connection
        if connection is not None and not connection.authenticated:
            timeout = min(timeout, max(0.0, connection.hello_deadline - time.monotonic()))
        return timeout

    def _check_parent(self) -> None:
        if os.getppid() != self._parent_pid:
            _log("parent process is gone; exiting")
            raise _Shutdown

    def _check_hello_deadline(self) -> None:
        connection = self._connection
        if connection is not None and not connection.authenticated and time.monotonic() >= connection.hello_deadline:
            self._connection_lost("the IPC server did not answer the authentication")

    # --- stdin: JSON-RPC from the CLI -----------------------------------------------------------------------

    def _on_stdin(self) -> None:
        data = os.read(self._stdin_fd, READ_CHUNK)
        if not data:
            raise _Shutdown
        buffer = self._stdin_buffer
        buffer += data
        while True:
            newline = buffer.find(b"\n", self._stdin_scanned)
            if newline < 0:
                self._stdin_scanned = len(buffer)
                if len(buffer) > STDIN_LINE_LIMIT:
                    if not self._discarding_line:
                        self._reply_error(None, INVALID_REQUEST, "JSON-RPC message too large")
                    self._discarding_line = True
                    buffer.clear()
                    self._stdin_scanned = 0
                return
            line = bytes(buffer[:newline])
            del buffer[: newline + 1]
            self._stdin_scanned = 0
            if self._discarding_line:
                self._discarding_line = False
                continue
            self._handle_line(line)

    def _handle_line(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            self._reply_error(None, PARSE_ERROR, "Parse error")
            return
        if not isinstance(message, dict):
            self._reply_error(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
            return
        method = message.get("method")
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
            self._reply_error(None, INVALID_REQUEST, "Invalid Request: bad id")
            return
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                return  # a response; the bridge sends no requests, so nothing waits for it
            self._reply_error(request_id, INVALID_REQUEST, "Invalid Request: no method")
            return
        params = message.get("params")
        if not has_id:
            self._handle_notification(method, params)
            return
        self._handle_request(request_id, method, params)

    def _handle_notification(self, method: str, params: object) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            self._cancel(params.get("requestId"))
        # notifications/initialized and anything else need no action.

    def _handle_request(self, request_id: JsonValue, method: str, params: object) -> None:
        match method:
            case "initialize":
                self._reply(request_id, self._initialize_result(params))
            case "ping":
                self._reply(request_id, {})
            case "tools/list":
                self._reply(request_id, {"tools": self._tools})
            case "tools/call":
                self._call_tool(request_id, params)
            case _:
                self._reply_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize_result(self, params: object) -> dict[str, object]:
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        }

    def _call_tool(self, request_id: JsonValue, params: object) -> None:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self._reply_error(request_id, INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
            return
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        meta = params.get("_meta")
        if not isinstance(arguments, dict) or (meta is not None and not isinstance(meta, dict)):
            self._reply_error(request_id, INVALID_PARAMS, "Invalid params: arguments and _meta must be objects")
            return
        call_id = self._next_id
        self._next_id += 1
        try:
            frame = encode_message(call_request(call_id, params["name"], arguments, meta))
        except FrameSizeError as exc:
            self._reply(request_id, _error_text("IPC message too large: ", str(exc)))
            return
        except ValueError as exc:  # NaN or a number out of float range: valid for json.loads, not for JSON out
            self._reply_error(request_id, INVALID_PARAMS, f"Invalid params: {exc}")
            return
        if self._connection is None:
            error = self._connect()
            if error is not None:
                self._reply(request_id, _error_text("IPC connection failed: ", error))
                return
        self._pending[call_id] = request_id
        self._send(frame)

    def _cancel(self, request_id: object) -> None:
        for call_id, waiting in self._pending.items():
            if waiting == request_id and type(waiting) is type(request_id):
                del self._pending[call_id]
                self._send(encode_message(cancel_request(call_id)))
                return

    # --- stdout ---------------------------------------------------------------------------------------------

    def _write(self, message: dict[str, object]) -> None:
        try:
            _write_all(self._stdout_fd, _to_json_line(message))
        except OSError:
            raise _Shutdown from None  # the CLI closed our stdout

    def _reply(self, request_id: JsonValue, result: object) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _reply_error(self, request_id: JsonValue, code: int, message: str) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    # --- the socket to the parent ---------------------------------------------------------------------------

    def _connect(self) -> str | None:
        """Open and authenticate a connection; return why it failed, or None."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(self._socket_path)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            return f"cannot connect to {self._socket_path}: {exc.strerror or exc}"
        connection = _Connection(sock)
        self._connection = connection
        self._selector.register(sock, selectors.EVENT_READ, _SOCKET)
        # Calls queued behind the hello are read by the server only once it accepted the hello.
        self._send(encode_message(hello_request(self._secret)))
        if self._connection is not connection:
            return "the IPC server closed the connection during authentication"
        return None

    def _send(self, frame: bytes) -> None:
        connection = self._connection
        if connection is None:
            return
        pending_before = bool(connection.outgoing)
        connection.outgoing += frame
        if not pending_before:
            self._flush(connection)

    def _flush(self, connection: _Connection) -> None:
        try:
            while connection.outgoing:
                sent = connection.sock.send(connection.outgoing)
                del connection.outgoing[:sent]
        except BlockingIOError:
            self._selector.modify(connection.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, _SOCKET)
            return
        except OSError as exc:
            refusal = None if connection.authenticated else _refusal_in(connection)
            self._connection_lost(refusal or f"sending to the IPC server failed: {exc.strerror or exc}")
            return
        self._selector.modify(connection.sock, selectors.EVENT_READ, _SOCKET)

    def _on_socket(self, events: int) -> None:
        connection = self._connection
        if connection is None:
            return
        if events & selectors.EVENT_WRITE:
            self._flush(connection)
            if self._connection is not connection:
                return
        if not events & selectors.EVENT_READ:
            return
        try:
            data = connection.sock.recv(READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self._connection_lost(f"reading from the IPC server failed: {exc.strerror or exc}")
            return
        if not data:
            self._connection_lost("the IPC server closed the connection")
            return
        try:
            bodies = connection.decoder.feed(data)
        except FrameError as exc:
            self._connection_lost(f"the IPC server sent a bad frame: {exc}")
            return
        for body in bodies:
            if self._connection is not connection:
                return
            self._on_frame(connection, body)

    def _on_frame(self, connection: _Connection, body: bytes) -> None:
        try:
            message = decode_message(body)
        except MessageFormatError as exc:
            _log(f"ignoring an unreadable message from the IPC server: {exc}")
            return
        message_id = message.get("id")
        error = message.get("error")
        if not connection.authenticated:
            result = message.get("result")
            if message_id == HELLO_ID and isinstance(result, dict) and result.get("authenticated") is True:
                connection.authenticated = True
                return
            self._connection_lost(_refusal(message))
            return
        if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id not in self._pending:
            if isinstance(error, dict):
                _log(f"IPC server reported: {error.get('message')}")
            return  # e.g. the answer to a call the CLI cancelled
        request_id = self._pending.pop(message_id)
        if isinstance(error, dict):
            text = error.get("message")
            if not isinstance(text, str) or not text:
                text = str(error.get("type") or "the tool failed without a message")
            self._reply(request_id, _error_text("", text))
            return
        try:
            result = normalize_tool_result(message.get("result"))
        except ValueError as exc:
            self._reply(request_id, _error_text("IPC protocol error: ", str(exc)))
            return
        self._reply(request_id, result)

    def _connection_lost(self, reason: str) -> None:
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        self._selector.unregister(connection.sock)
        connection.sock.close()
        pending, self._pending = self._pending, {}
        for request_id in pending.values():
            self._reply(request_id, _error_text("IPC connection failed: ", reason))
        if not connection.authenticated:
            _log(f"IPC connection failed: {reason}")
            return
        error = self._connect()
        if error is not None:
            _log(f"IPC connection lost ({reason}) and cannot be re-established ({error}); exiting")
            raise _Shutdown
        _log(f"IPC connection lost ({reason}); reconnected")


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Shutdown


def main(argv: list[str] | None = None) -> int:
    """Run the bridge; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        _log("usage: python -m claudecode_model.ipc.bridge <socket_path> <schema_path>")
        return 2
    socket_path, schema_path = args
    secret = os.environ.get(SECRET_ENV_VAR)
    if not secret:
        _log(f"{SECRET_ENV_VAR} is not set; the bridge must be started from the session's server config")
        return 2
    try:
        tools = load_tools(schema_path)
    except (OSError, ValueError) as exc:
        _log(f"cannot load the tool schemas from {schema_path}: {exc}")
        return 2
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    bridge = Bridge(socket_path, tools, secret)
    try:
        bridge.run()
    except _Shutdown:
        pass
    finally:
        bridge.close()
    return 0


def _refusal(message: dict[str, object]) -> str:
    """Why the server answered the hello with ``message`` instead of accepting it."""
    error = message.get("error")
    reason = error.get("message") if isinstance(error, dict) else None
    return f"the IPC server refused the bridge: {reason or 'no reason given'}"


def _refusal_in(connection: _Connection) -> str | None:
    """The server's refusal of the hello, if it sent one before closing: a call written after the hello can fail
    with a broken pipe while the refusal still waits, unread, in the socket."""
    try:
        bodies = connection.decoder.feed(connection.sock.recv(READ_CHUNK))
    except (OSError, FrameError):
        return None
    for body in bodies:
        try:
            return _refusal(decode_message(body))
        except MessageFormatError:
            continue
    return None


if __name__ == "__main__":
    sys.exit(main())
