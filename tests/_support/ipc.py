"""Helpers of the IPC bridge tests: example tools, the bridge's environment, leak checks (the bridge process is driven
by :class:`tests._support.stdio_mcp.StdioMcpClient`)."""

from __future__ import annotations

import asyncio
import glob
import os
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from claudecode_model.ipc import IPCSession, ToolSchema, stdio_server_config
from claudecode_model.ipc._constants import BRIDGE_MODULE, SOCKET_FILE_PREFIX
from claudecode_model.ipc._types import JsonValue, MetaToolHandler, ToolHandler
from tests._support.processes import process_table

if TYPE_CHECKING:
    from pathlib import Path


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
    def handlers(self) -> dict[str, ToolHandler]:
        return {
            "echo": self.echo,
            "fail": self.fail,
            "big": self.big,
            "block": self.block,
            "together": self.together,
        }

    @property
    def meta_handlers(self) -> dict[str, MetaToolHandler]:
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
            self.handlers,
            self.schemas,
            meta_tool_handlers=self.meta_handlers,
            **kwargs,  # type: ignore[arg-type]  # each test passes the keyword arguments IPCSession takes
        )


# --- the bridge process -------------------------------------------------------------------------------------


def bridge_env(session: IPCSession, package_root: Path | None) -> dict[str, str]:
    """The environment the CLI gives the bridge (ours plus the config's), optionally with the light root."""
    env = {**os.environ, **stdio_server_config(session)["env"]}
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    return env
