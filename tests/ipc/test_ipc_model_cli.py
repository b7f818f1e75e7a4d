"""``transport="stdio"`` through ClaudeCodeModel: the real CLI starts the bridge, which calls back into the run."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeSettingsError, ToolValidationError
from claudecode_model._tools.servers import resolve_transport
from claudecode_model.ipc import SECRET_ENV_VAR, SOCKET_FILE_PREFIX
from claudecode_model.ipc._constants import BRIDGE_MODULE
from claudecode_model.testing import OfflineBackend
from tests._support.brains import call_every_tool_then_summarise
from tests._support.polling import wait_until
from tests._support.processes import environ, live_descendants, process_table

pytestmark = pytest.mark.cli


@dataclass
class Deps:
    city: str
    lock: threading.Lock


@dataclass
class ProcessSnapshot:
    """What the tool saw of the process tree while it ran."""

    bridges: list[list[str]]
    bridge_environ: dict[str, str]
    command_lines: list[str]


def snapshot_processes() -> ProcessSnapshot:
    """Bridges among this test's descendants (other test runs may share the machine); every command line."""
    ours = live_descendants()
    bridges: list[list[str]] = []
    bridge_environ: dict[str, str] = {}
    command_lines: list[str] = []
    for process in process_table():
        if not process.alive:
            continue
        command_lines.append("\0".join(process.argv))
        if BRIDGE_MODULE in process.argv and process.pid in ours:
            bridges.append(process.argv)
            bridge_environ = environ(process.pid)
    return ProcessSnapshot(bridges, bridge_environ, command_lines)


def _bridge_pids() -> set[int]:
    return {process.pid for process in process_table() if BRIDGE_MODULE in process.argv and process.alive}


@pytest.fixture
async def stdio_model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    claude_backend.set_brain(FunctionModel(call_every_tool_then_summarise()))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_transport="stdio", tool_execution="cli")
    yield model
    await model.aclose()


async def test_agent_tools_run_through_the_bridge_with_real_deps(
    stdio_model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    agent = Agent(stdio_model, deps_type=Deps)
    seen: list[ProcessSnapshot] = []

    @agent.tool
    def where(ctx: RunContext[Deps]) -> str:
        """Where the user is."""
        seen.append(snapshot_processes())
        return f"{ctx.deps.city}, lock held: {ctx.deps.lock.locked()}"

    result = await agent.run("go", deps=Deps("Oslo", threading.Lock()))

    assert result.output == "Answer: Oslo, lock held: False"
    [snapshot] = seen
    [bridge_argv] = snapshot.bridges
    # The bridge serves this session's socket and schema file, and got the secret through its environment...
    assert any(SOCKET_FILE_PREFIX in arg for arg in bridge_argv)
    secret = snapshot.bridge_environ[SECRET_ENV_VAR]
    assert len(secret) >= 32
    # ...while no process's command line (the CLI's carries the MCP config) shows the secret.
    assert not [line for line in snapshot.command_lines if secret in line]
    assert [r.text for r in claude_backend.requests[-1].tool_results()] == ["Oslo, lock held: False"]
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert [p.tool_name for p in response.parts if isinstance(p, NativeToolCallPart)] == ["where"]
    assert [p.content for p in response.parts if isinstance(p, NativeToolReturnPart)] == ["Oslo, lock held: False"]


async def test_tool_errors_and_exact_text_over_the_bridge(stdio_model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(stdio_model)

    @agent.tool_plain
    def poem() -> str:
        return 'line one\n"ünïcödé" 🎉 {"not": "json"}'

    @agent.tool_plain
    def explode() -> str:
        raise RuntimeError("the disk is on fire")

    await agent.run("go")

    # Both tools may run at once (they are not sequential), so the results can come back in either order.
    results = claude_backend.requests[-1].tool_results()
    [poem_result] = [r for r in results if not r.is_error]
    [explode_result] = [r for r in results if r.is_error]
    assert poem_result.text == 'line one\n"ünïcödé" 🎉 {"not": "json"}'
    assert "the disk is on fire" in explode_result.text


async def test_follow_up_turn_reuses_the_cli_and_its_bridge(stdio_model: ClaudeCodeModel):
    agent = Agent(stdio_model)
    bridge_pids: list[set[int]] = []

    @agent.tool_plain
    def ping() -> str:
        bridge_pids.append({pid for pid in live_descendants() if pid in _bridge_pids()})
        return "pong"

    first = await agent.run("one")
    second = await agent.run("two", message_history=first.all_messages())

    assert second.output == "Answer: pong"
    assert len(bridge_pids) == 2
    assert bridge_pids[0] == bridge_pids[1]
    assert len(bridge_pids[0]) == 1


async def test_registered_toolsets_over_the_bridge(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(call_every_tool_then_summarise()))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution="cli")
    agent = Agent(model)
    bridges_seen: list[int] = []

    @agent.tool_plain
    def shout() -> str:
        bridges_seen.append(len(snapshot_processes().bridges))
        return "HEY"

    model.set_agent_toolsets(agent._function_toolset, server_name="my_tools", transport="stdio")
    try:
        result = await agent.run("go")
    finally:
        await model.aclose()

    assert result.output == "Answer: HEY"
    assert bridges_seen == [1]
    assert claude_backend.requests[0].tool_names == ["mcp__my_tools__shout"]


def test_unknown_transport_is_a_typed_error(claude_backend: OfflineBackend):
    with pytest.raises(ClaudeCodeSettingsError, match="tool_transport='tcp'"):
        ClaudeCodeModel(tool_transport="tcp")  # type: ignore[arg-type]
    model = ClaudeCodeModel()
    with pytest.raises(ToolValidationError, match="Unknown tool transport"):
        model.set_agent_toolsets([], transport="pipe")  # type: ignore[arg-type]


def test_auto_picks_in_process_for_a_current_cli_and_the_bridge_for_an_old_one(tmp_path: Path):
    model = ClaudeCodeModel()
    assert resolve_transport("auto", model.cli_path) == "sdk"
    assert resolve_transport("stdio", model.cli_path) == "stdio"
    old_cli = tmp_path / "claude"
    old_cli.write_text("#!/bin/sh\necho '1.0.128 (Claude Code)'\n")
    old_cli.chmod(0o755)
    assert resolve_transport("auto", old_cli) == "stdio"
    unknown_cli = tmp_path / "missing"
    assert resolve_transport("auto", unknown_cli) == "sdk"


async def test_cancelling_a_run_mid_call_stops_the_cli_and_the_bridge(stdio_model: ClaudeCodeModel):
    import asyncio

    agent = Agent(stdio_model)
    started = asyncio.Event()

    @agent.tool_plain
    async def wait_forever() -> str:
        if started.is_set():
            return "not this time"
        started.set()
        await asyncio.Event().wait()
        return "never"

    run = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(started.wait(), timeout=60)
    assert len(_bridge_pids() & live_descendants()) == 1
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    # The IPC files are gone at once and the CLI is stopped, so its bridge exits: not only at aclose().
    assert not [name for name in os.listdir(tempfile.gettempdir()) if name.startswith(SOCKET_FILE_PREFIX)]
    assert wait_until(lambda: not _bridge_pids() & live_descendants())
    # The model still serves the next run.
    assert (await agent.run("again")).output == "Answer: not this time"
