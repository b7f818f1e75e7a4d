"""Helpers of the IPC bridge tests: example tools, a bridge process driver, leak checks."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from claudecode_model.ipc import IPCSession, ToolSchema, stdio_server_config
from claudecode_model.ipc._constants import SOCKET_FILE_PREFIX
from claudecode_model.ipc._types import JsonValue
from tests._support.processes import process_table

if TYPE_CHECKING:
    from pathlib import Path

BRIDGE_MODULE = "claudecode_model.ipc.bridge"


# --- leak checks --------------------------------------------------------------------------------------------


def ipc_temp_entries() -> set[str]:
    """Every ``claudecode_ipc_*`` entry in this test session's temp dir.

    A session falls back to ``/tmp`` when the temp dir path is too long for a socket; the fixtures record the
    directories of every session started, which covers that case without seeing other processes' files there.
    """
    return set(glob.glob(os.path.join(tempfile.gettempdir(), f"{SOCKET_FILE_PREFIX}*")))


def bridge_processes(directories: set[str]) -> list[tuple[int, list[str]]]:
    """Live bridge processes that are children of this process or serve one of ``directories``."""
    me = os.getpid()
    found = []
    for process in process_table():
        if not process.alive or BRIDGE_MODULE not in process.argv:
            continue
        serves_ours = any(directory in arg for arg in process.argv for directory in directories)
        if process.ppid == me or serves_ours:
            found.append((process.pid, process.argv))
    return found


# --- example tools ------------------------------------------------------------------------------------------


def text_result(text: str, *, is_error: bool = False) -> dict[str, object]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


@dataclass
class Toolbox:
    """Tools with observable behaviour; ``handlers``/``meta_handlers``/``schemas`` feed an ``IPCSession``."""

    barrier_parties: int = 20
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    metas: list[dict[str, object]] = field(default_factory=list)
    barrier: asyncio.Barrier | None = None

    async def echo(self, arguments: dict[str, object]) -> dict[str, object]:
        return text_result(str(arguments["text"]))

    async def fail(self, arguments: dict[str, object]) -> dict[str, object]:
        raise ValueError(f"the tool failed: {arguments.get('why', 'no reason')}")

    async def big(self, arguments: dict[str, object]) -> dict[str, object]:
        size = arguments["size"]
        assert isinstance(size, int)
        return text_result("x" * size)

    async def block(self, arguments: dict[str, object]) -> dict[str, object]:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")

    async def together(self, arguments: dict[str, object]) -> dict[str, object]:
        """Returns only once ``barrier_parties`` calls are running at the same time."""
        if self.barrier is None:
            self.barrier = asyncio.Barrier(self.barrier_parties)
        await self.barrier.wait()
        return text_result(f"call {arguments['n']}")

    async def whoami(self, arguments: dict[str, object], meta: dict[str, object]) -> dict[str, object]:
        self.metas.append(meta)
        return text_result(f"tool_use_id={meta.get('claudecode/toolUseId')}")

    @property
    def handlers(self) -> dict[str, object]:
        return {
            "echo": self.echo,
            "fail": self.fail,
            "big": self.big,
            "block": self.block,
            "together": self.together,
        }

    @property
    def meta_handlers(self) -> dict[str, object]:
        return {"whoami": self.whoami}

    @property
    def schemas(self) -> list[ToolSchema]:
        obj: dict[str, JsonValue] = {"type": "object"}
        return [
            {
                "name": "echo",
                "description": "Returns its text.",
                "input_schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
                "annotations": {"readOnlyHint": True},
            },
            {"name": "fail", "description": "Always raises.", "input_schema": dict(obj)},
            {"name": "big", "description": "Returns size bytes.", "input_schema": dict(obj)},
            {"name": "block", "description": "Never returns.", "input_schema": dict(obj)},
            {"name": "together", "description": "Waits for its siblings.", "input_schema": dict(obj)},
            {"name": "whoami", "description": "Returns the tool_use id.", "input_schema": dict(obj)},
        ]

    def session(self, **kwargs: object) -> IPCSession:
        return IPCSession(
            self.handlers,  # type: ignore[arg-type]
            self.schemas,
            meta_tool_handlers=self.meta_handlers,  # type: ignore[arg-type]
            **kwargs,  # type: ignore[arg-type]
        )


# --- the bridge process -------------------------------------------------------------------------------------


def bridge_env(session: IPCSession, package_root: Path | None) -> dict[str, str]:
    """The environment the CLI gives the bridge (ours plus the config's), optionally with the light root."""
    env = {**os.environ, **stdio_server_config(session)["env"]}
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    return env


class BridgeProcess:
    """Drives a bridge subprocess over MCP JSON-RPC on its stdin/stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._waiting: dict[object, asyncio.Future[dict[str, object]]] = {}
        self.unsolicited: asyncio.Queue[dict[str, object]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, args: list[str], env: dict[str, str]) -> BridgeProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            BRIDGE_MODULE,
            *args,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
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

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def notify(self, method: str, params: dict[str, object] | None = None) -> None:
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def expect(self, request_id: object) -> asyncio.Future[dict[str, object]]:
        future: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        return future

    async def request(
        self, request_id: object, method: str, params: dict[str, object] | None = None
    ) -> dict[str, object]:
        future = self.expect(request_id)
        message: dict[str, object] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message).encode() + b"\n")
        return await asyncio.wait_for(future, 30)

    async def initialize(self) -> dict[str, object]:
        params: dict[str, object] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }
        response = await self.request("init", "initialize", params)
        await self.notify("notifications/initialized")
        return response

    async def call(
        self, request_id: object, name: str, arguments: dict[str, object], **extra: object
    ) -> dict[str, object]:
        response = await self.request(request_id, "tools/call", {"name": name, "arguments": arguments, **extra})
        result = response["result"]
        assert isinstance(result, dict)
        return result

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(OSError):
            await self.process.stdin.wait_closed()

    async def wait_exit(self, within: float = 10.0) -> int:
        return await asyncio.wait_for(self.process.wait(), within)

    async def stderr_text(self) -> str:
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode()

    async def aclose(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        if self.process.stdin is not None:
            self.process.stdin.close()
