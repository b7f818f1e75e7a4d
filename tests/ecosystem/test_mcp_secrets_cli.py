"""An ``MCPServerTool``'s token and headers never reach a command line (issue 35): every process started for a run,
the CLI and all its descendants, is read from ``/proc`` while the run is in progress, in both tool transports; the
token still reaches the server as its Authorization header."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from pydantic_ai import Agent
from pydantic_ai.capabilities import NativeTool
from pydantic_ai.messages import TextPart, ToolCallPart
from pydantic_ai.native_tools import MCPServerTool

from claudecode_model import ClaudeCodeModel
from claudecode_model._process.mcp_config_file import MCP_CONFIG_PREFIX
from claudecode_model.exceptions import CLITimeoutError
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.asgi import serve_asgi
from tests._support.brains import Script
from tests._support.processes import live_descendants, process_table

pytestmark = pytest.mark.cli

TOKEN = "tok-3f9a1c7e-never-on-argv"
HEADER_VALUE = "hdr-81b2d4-never-on-argv"
HEADERS = {"X-Tenant-Key": HEADER_VALUE}


class RunProcesses:
    """What the processes of this test process's tree showed while the run was in progress."""

    def __init__(self) -> None:
        self.argvs: dict[int, list[str]] = {}

    def look(self) -> None:
        """Read the command line of every live descendant of this process."""
        mine = live_descendants()
        for process in process_table():
            if process.pid in mine and process.alive:
                self.argvs[process.pid] = process.argv

    def config_files(self) -> list[Path]:
        """The files the CLI was told to read MCP servers from."""
        return [
            Path(argv[index + 1])
            for argv in self.argvs.values()
            for index, arg in enumerate(argv[:-1])
            if arg == "--mcp-config" and not argv[index + 1].startswith("{")
        ]


@asynccontextmanager
async def _mcp_server(seen: RunProcesses) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A streamable-HTTP MCP server on 127.0.0.1 whose ``lookup`` tool reads the process table (the CLI is waiting
    for it then); yields its URL and the headers of each HTTP request it served."""
    requests: list[dict[str, str]] = []
    server = MCPServer("notes")

    @server.tool(structured_output=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        seen.look()
        for path in seen.config_files():  # the private file exists while the CLI runs, and is private
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        return f"{key} is teal"

    inner = server.streamable_http_app()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            requests.append({name.decode().lower(): value.decode() for name, value in scope["headers"]})
        await inner(scope, receive, send)

    async with serve_asgi(app, lifespan="on", graceful_shutdown=5) as url:
        yield f"{url}/mcp", requests


@pytest.mark.parametrize("transport", ["sdk", "stdio"])
async def test_no_process_of_the_run_shows_the_token_or_headers(claude_backend: OfflineBackend, transport: Any):
    seen = RunProcesses()
    script = Script(
        [ToolCallPart("mcp__notes__lookup", {"key": "colour"})],
        [ToolCallPart("probe", {})],
        [TextPart("done")],
    )
    claude_backend.set_brain(script.model)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport)
    try:
        async with _mcp_server(seen) as (url, requests):
            tool = MCPServerTool(id="notes", url=url, authorization_token=TOKEN, headers=HEADERS)
            agent = Agent(model, capabilities=[NativeTool(tool)])

            @agent.tool_plain
            def probe() -> str:
                """Look at the processes of the run (the CLI waits for this result)."""
                seen.look()
                return "looked"

            result = await agent.run("Look it up")
            files = seen.config_files()
            await model.aclose()  # the CLI holds a connection to the server
    finally:
        await model.aclose()

    assert result.output == "done"
    assert "colour is teal" in str(script.returns(1)[0].content)
    # The token and the header arrived where they belong.
    mcp_requests = [headers for headers in requests if "authorization" in headers]
    assert mcp_requests
    assert {headers["authorization"] for headers in mcp_requests} == {f"Bearer {TOKEN}"}
    assert {headers.get("x-tenant-key") for headers in mcp_requests} == {HEADER_VALUE}
    # Every process of the run was seen, and none of them shows the secrets on its command line.
    commands = [" ".join(argv) for argv in seen.argvs.values()]
    assert any("--mcp-config" in command for command in commands), commands  # the CLI
    if transport == "stdio":
        assert any("claudecode_model.ipc.bridge" in command for command in commands), commands
    for pid, argv in seen.argvs.items():
        for secret in (TOKEN, HEADER_VALUE):
            assert not any(secret in arg for arg in argv), f"process {pid} shows a secret: {argv}"
    # The CLI read the servers from a private file, gone with the CLI.
    assert files
    assert not any(path.exists() or path.parent.exists() for path in files)


def _config_folders() -> set[Path]:
    base = Path(tempfile.gettempdir())
    return {base / name for name in os.listdir(base) if name.startswith(f"{MCP_CONFIG_PREFIX}{os.getpid()}_")}


async def _gone(paths: set[Path]) -> bool:
    deadline = time.monotonic() + 10
    while any(path.exists() for path in paths) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not any(path.exists() for path in paths)


@pytest.mark.parametrize("end", ["timeout", "cancel"])
async def test_the_private_file_goes_when_the_cli_is_stopped(claude_backend: OfflineBackend, end: str):
    claude_backend.fail_next(Failure.stall(30))
    before = _config_folders()
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, settings={"claude_code_timeout": 3})
    # Nothing listens there: the CLI reports the server as failed and goes on.
    tool = MCPServerTool(id="notes", url="http://127.0.0.1:9/mcp", authorization_token=TOKEN, headers=HEADERS)
    run = asyncio.create_task(Agent(model, capabilities=[NativeTool(tool)]).run("hello"))
    try:
        while not claude_backend.requests:
            await asyncio.sleep(0.05)
        during = _config_folders() - before
        assert len(during) == 1
        [folder] = during
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((folder / "mcp.json").stat().st_mode) == 0o600
        assert TOKEN in (folder / "mcp.json").read_text()
        if end == "cancel":
            run.cancel()
        with pytest.raises(CLITimeoutError if end == "timeout" else asyncio.CancelledError):
            await run
        assert await _gone(during)  # before the model is closed: the CLI's stop removes it
    finally:
        run.cancel()
        await model.aclose()
    assert _config_folders() == before
