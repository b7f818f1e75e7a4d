"""A stdio MCP server process driven with newline-delimited JSON-RPC, as the Claude Code CLI drives it.

The one such client of the repository: the IPC bridge tests and the bench's bridge suites both use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from typing import Any

PROTOCOL_VERSION = "2025-06-18"


class StdioMcpClient:
    """A server process on this client's pipes: requests matched to responses by id, everything else queued."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._waiting: dict[object, asyncio.Future[dict[str, Any]]] = {}
        self.unsolicited: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        """Messages no request waits for (answers to raw lines, notifications)."""
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def spawn(cls, argv: list[str], env: dict[str, str], *, stderr: int = subprocess.PIPE) -> StdioMcpClient:
        """Start ``argv`` with ``env``; ``stderr``: ``subprocess.PIPE`` (read by :meth:`stderr_text`) or
        ``subprocess.DEVNULL``."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            limit=64 * 1024 * 1024,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            future = self._waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
            else:
                await self.unsolicited.put(message)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the MCP server process closed its stdout"))

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def expect(self, request_id: object) -> asyncio.Future[dict[str, Any]]:
        """The future of the response with ``request_id`` (for a request sent raw)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        return future

    async def request(
        self, request_id: object, method: str, params: dict[str, Any] | None = None, *, within: float = 30
    ) -> dict[str, Any]:
        """Send a request and return its whole response message (``result`` or ``error``)."""
        future = self.expect(request_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message).encode() + b"\n")
        return await asyncio.wait_for(future, within)

    async def initialize(self, client_name: str = "tests") -> dict[str, Any]:
        """The handshake the CLI makes (``initialize``, then ``notifications/initialized``); the response."""
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1"},
        }
        response = await self.request("init", "initialize", params)
        await self.notify("notifications/initialized")
        return response

    async def call(
        self, request_id: object, name: str, arguments: dict[str, Any], *, within: float = 30, **extra: object
    ) -> dict[str, Any]:
        """A ``tools/call`` (``extra``: more params, such as ``_meta``) and its result."""
        params = {"name": name, "arguments": arguments, **extra}
        response = await self.request(request_id, "tools/call", params, within=within)
        result = response["result"]
        assert isinstance(result, dict)
        return result

    async def close_stdin(self) -> None:
        """How a stdio server is told to stop."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(OSError):
            await self.process.stdin.wait_closed()

    async def wait_exit(self, within: float = 10.0) -> int:
        return await asyncio.wait_for(self.process.wait(), within)

    async def stderr_text(self) -> str:
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode()

    async def aclose(self, grace: float = 0.0) -> None:
        """Stop the process: after ``grace`` seconds for it to exit once its stdin is closed, killed."""
        if grace > 0 and self.process.returncode is None:
            await self.close_stdin()
            with contextlib.suppress(TimeoutError):
                await self.wait_exit(grace)
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        if self.process.stdin is not None:
            self.process.stdin.close()
