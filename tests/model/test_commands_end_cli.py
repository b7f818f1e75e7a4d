"""The commands Claude Code's Bash tool starts end with their CLI, on every path that stops it, through the real CLI.

Each test has Claude start a command that writes a tick into a scratch directory five times a second for two
minutes, stops the CLI while it runs, then checks that no process running the command is left anywhere on the
machine (a killed CLI's commands are re-parented to PID 1, so not only this process's descendants are looked at)
and that the file stopped growing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, CLITimeoutError
from claudecode_model.testing import OfflineBackend
from tests._support.processes import live_descendants, process_table
from tests._support.subprocesses import SRC_DIR

pytestmark = pytest.mark.cli

BASH: ClaudeCodeModelSettings = {"claude_code_builtin_tools": ["Bash"]}


def ticking(scratch: Path) -> str:
    return f"for i in $(seq 600); do date +%s%N >> {scratch}/ticks; sleep 0.2; done"


def bash_brain(scratch: Path, *, background: bool = False, then: str | None = None) -> FunctionModel:
    """Claude runs the ticking command (in the background with ``background``), then answers "started", or calls
    the agent's tool ``then``."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        replies = sum(isinstance(message, ModelResponse) for message in messages)
        if replies == 0:
            call: dict[str, object] = {"command": ticking(scratch), "description": "tick"}
            if background:
                call["run_in_background"] = True
            return ModelResponse(parts=[ToolCallPart("Bash", call)])
        if replies == 1 and then is not None:
            return ModelResponse(parts=[ToolCallPart(f"mcp__pydantic_tools__{then}", {})])
        returned = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(f"started: {returned[0].content if returned else ''}"[:200])])

    return FunctionModel(brain)


def command_processes(scratch: Path) -> list[int]:
    """Live processes anywhere on the machine running the command (their command line names the scratch dir)."""
    return [entry.pid for entry in process_table() if entry.alive and str(scratch) in " ".join(entry.argv)]


def ticks(scratch: Path) -> int:
    try:
        return (scratch / "ticks").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


async def until_ticking(scratch: Path, times: int = 2) -> None:
    """Until the command has written ``times`` ticks (it runs)."""
    deadline = time.monotonic() + 60
    while ticks(scratch) < times:
        assert time.monotonic() < deadline, "the command never started"
        await asyncio.sleep(0.05)


def until_ticking_sync(scratch: Path) -> None:
    deadline = time.monotonic() + 60
    while ticks(scratch) < 2:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)


async def assert_stopped(scratch: Path) -> None:
    """No process of the command is left (waiting for the lifeline when the program was killed), and the file no
    longer grows."""
    await asyncio.to_thread(assert_stopped_sync, scratch)


def assert_stopped_sync(scratch: Path) -> None:
    deadline = time.monotonic() + 15
    while (left := command_processes(scratch)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"the command outlived its CLI: {left}"
    written = ticks(scratch)
    time.sleep(0.6)  # three ticks' time
    assert ticks(scratch) == written


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """The command's scratch dir; whatever still runs the command after the test is killed (a failed test)."""
    yield tmp_path
    for pid in command_processes(tmp_path):
        os.kill(pid, signal.SIGKILL)


async def test_the_timeout_stops_the_command(claude_backend: OfflineBackend, scratch: Path):
    claude_backend.set_brain(bash_brain(scratch))
    async with ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0) as model:
        with pytest.raises(CLITimeoutError):
            await Agent(model).run("tick", model_settings=ClaudeCodeModelSettings({**BASH, "claude_code_timeout": 10}))
        assert ticks(scratch) >= 1, "the command had not started when the time ran out"

        await assert_stopped(scratch)


async def test_cancelling_the_run_stops_the_command(claude_backend: OfflineBackend, scratch: Path):
    claude_backend.set_brain(bash_brain(scratch))
    async with ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0) as model:
        run = asyncio.create_task(Agent(model).run("tick", model_settings=BASH))
        await until_ticking(scratch)

        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

        await assert_stopped(scratch)


async def test_a_background_command_outlives_its_turn_and_ends_with_aclose(
    claude_backend: OfflineBackend, scratch: Path
):
    claude_backend.set_brain(bash_brain(scratch, background=True))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        result = await Agent(model).run("tick", model_settings=BASH)
        assert result.output.startswith("started")
        await until_ticking(scratch)  # the turn is over, the session is kept: its background command goes on
    finally:
        await model.aclose()

    await assert_stopped(scratch)


def test_close_stops_the_background_command_of_a_kept_session(
    claude_backend: OfflineBackend, scratch: Path, run_sync_loop: None
):
    claude_backend.set_brain(bash_brain(scratch, background=True))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        Agent(model).run_sync("tick", model_settings=BASH)
        until_ticking_sync(scratch)
    finally:
        model.close()

    assert_stopped_sync(scratch)


async def test_a_kept_session_that_expires_stops_its_background_command(claude_backend: OfflineBackend, scratch: Path):
    claude_backend.set_brain(bash_brain(scratch, background=True))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, session_idle_timeout=5)
    try:
        result = await Agent(model).run("tick", model_settings=BASH)
        assert result.output.startswith("started")
        await until_ticking(scratch, times=1)

        await assert_stopped(scratch)  # the idle session expires within the polling's bound, its command with it
    finally:
        await model.aclose()


async def test_an_expired_waiting_turn_stops_its_background_command(claude_backend: OfflineBackend, scratch: Path):
    """Claude starts a background command, then calls a tool that needs approval: the turn waits for it, and when
    the waiting turn expires (``session_idle_timeout``) its CLI and the command stop."""
    claude_backend.set_brain(bash_brain(scratch, background=True, then="act"))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, session_idle_timeout=5)
    agent: Agent[None, str | DeferredToolRequests] = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def act() -> str:
        return "acted"

    try:
        result = await agent.run("tick, then act", model_settings=BASH)
        assert isinstance(result.output, DeferredToolRequests)
        await until_ticking(scratch, times=1)

        await assert_stopped(scratch)  # within the idle timeout and the polling's bound
    finally:
        await model.aclose()


PROGRAM = """
import json, sys
from pydantic_ai import Agent
from claudecode_model import ClaudeCodeModel

config = json.loads(sys.argv[1])
Agent(ClaudeCodeModel(env=config["env"])).run_sync("tick", model_settings={"claude_code_builtin_tools": ["Bash"]})
"""


def test_a_killed_program_takes_its_commands_with_it(claude_backend: OfflineBackend, scratch: Path):
    claude_backend.set_brain(bash_brain(scratch))
    program = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, json.dumps({"env": claude_backend.cli_env()})],
        env={**os.environ, "PYTHONPATH": str(SRC_DIR)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until_ticking_sync(scratch)
        helpers = live_descendants(program.pid)
        program.kill()
        program.wait()
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()

    assert_stopped_sync(scratch)
    deadline = time.monotonic() + 10
    while (left := helpers & alive()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == set(), "the program's CLI or its lifeline watcher outlived it"


def alive() -> set[int]:
    return {entry.pid for entry in process_table() if entry.alive}


def test_a_program_that_ends_without_closing_its_model_stops_its_background_command(
    claude_backend: OfflineBackend, scratch: Path
):
    claude_backend.set_brain(bash_brain(scratch, background=True))
    until_first_tick = f"""
import os, time
deadline = time.monotonic() + 60
while not os.path.exists({str(scratch / "ticks")!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
"""  # then the program ends, its kept session and the background command with it
    program = subprocess.run(
        [sys.executable, "-c", PROGRAM + until_first_tick, json.dumps({"env": claude_backend.cli_env()})],
        env={**os.environ, "PYTHONPATH": str(SRC_DIR)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (program.returncode, program.stderr) == (0, "")
    assert ticks(scratch) >= 1  # the command had started before the program's exit stopped it

    assert_stopped_sync(scratch)
