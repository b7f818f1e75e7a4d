"""Spare CLI sessions through the real CLI and the offline backend: claimed without a spawn, replaced when one died,
nothing left behind (the pool's own logic and the process cap are tested on the in-memory CLI, ``test_spares.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from claude_agent_sdk import project_key_for_directory
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, SQLiteSessionStore
from claudecode_model.testing import OfflineBackend
from tests._support.agents import agent_with_probe
from tests._support.polling import wait_for
from tests._support.processes import live_descendants, process_table
from tests._support.responses import details, session_of, source_of

pytestmark = pytest.mark.cli


def tool_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the first offered tool once, then answer with what it returned."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f"tool said {returns[0].content}")])
    if info.function_tools:
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])
    return ModelResponse(parts=[TextPart("no tools")])


@pytest.fixture
def backend(claude_backend: OfflineBackend) -> OfflineBackend:
    claude_backend.set_brain(FunctionModel(tool_then_text))
    return claude_backend


def cli_children() -> set[int]:
    """The CLI processes this test process started (its direct children)."""
    me = os.getpid()
    return {p.pid for p in process_table() if p.alive and p.ppid == me}


@pytest.fixture
async def spare_model(backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=1)
    yield model
    await model.aclose()


async def test_the_next_new_conversation_claims_the_spare_without_a_spawn(spare_model: ClaudeCodeModel) -> None:
    agent, seen = agent_with_probe(spare_model, cli_children)
    first = await agent.run("one")
    assert source_of(first) == "fresh"
    assert first.output == "tool said p"
    assert await spare_model.prewarm(agent)  # the spare the first run left is up (nothing more is started)
    before = cli_children()
    assert len(before) == 2  # the first conversation's kept session and the spare

    second = await agent.run("two")

    assert source_of(second) == "spare"
    assert second.output == "tool said p"
    assert seen[-1] == before  # while the second conversation ran its tool, no process had been started
    second_details = details(second.all_messages()[-1])
    assert isinstance(second_details.get("first_token_seconds"), float)
    assert second_details["session_id"] != details(first.all_messages()[-1])["session_id"]


async def test_a_spare_that_died_while_idle_is_replaced_not_used(spare_model: ClaudeCodeModel) -> None:
    agent, seen = agent_with_probe(spare_model, cli_children)
    assert await spare_model.prewarm(agent)
    (spare_pid,) = cli_children()
    os.kill(spare_pid, signal.SIGKILL)
    assert await wait_for(lambda: spare_pid not in cli_children())

    result = await agent.run("after the spare died")

    assert result.output == "tool said p"
    assert spare_pid not in seen[-1]
    assert source_of(result) in ("spare", "fresh")  # a replacement spare, or a process of its own
    assert await spare_model.prewarm(agent)  # and a live spare exists again


async def test_prewarm_then_run_and_close_leaves_nothing(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env())
    agent, _ = agent_with_probe(model, cli_children)
    assert await model.prewarm(agent)
    assert len(cli_children()) == 1
    assert len(backend.requests) == 0  # nothing reached Claude

    result = await agent.run("go")

    assert source_of(result) == "spare"
    assert result.output == "tool said p"
    await model.aclose()
    assert not live_descendants()


async def test_a_spare_mirrors_its_conversation_into_the_session_store(backend: OfflineBackend, tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    model = ClaudeCodeModel(env=backend.cli_env(), session_store=store)
    agent, _ = agent_with_probe(model, cli_children)
    try:
        assert await model.prewarm(agent)
        result = await agent.run("remember the word kiwi")
        assert source_of(result) == "spare"
    finally:
        await model.aclose()
    try:
        key = {"project_key": project_key_for_directory(os.getcwd()), "session_id": session_of(result)}
        entries = await store.load(key)  # type: ignore[arg-type]
    finally:
        await store.aclose()
    assert entries is not None
    assert "remember the word kiwi" in json.dumps(entries)


def test_interpreter_exit_leaves_no_spare(backend: OfflineBackend, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    script = tmp_path / "exit_with_spare.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, json, sys
            from pydantic_ai import Agent
            from claudecode_model import ClaudeCodeModel

            env = json.loads(sys.argv[1])
            model = ClaudeCodeModel(env=env)
            loop = asyncio.new_event_loop()
            assert loop.run_until_complete(model.prewarm(Agent(model, instructions="x")))
            print("ready", flush=True)
            # exit without closing the model or the loop
            """
        )
    )
    import json

    env = {**backend.cli_env(), "SPARE_TEST_MARKER": marker}
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(env)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ready", done.stderr

    def marked() -> list[int]:
        found = []
        for process in process_table():
            try:
                environ = Path(f"/proc/{process.pid}/environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in environ and process.alive:
                found.append(process.pid)
        return found

    deadline = time.monotonic() + 10
    while marked():
        assert time.monotonic() < deadline, f"CLI processes left after the interpreter exited: {marked()}"
        time.sleep(0.05)


async def test_a_stdio_transport_spare_serves_the_run_and_closes_its_bridge(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), tool_transport="stdio")
    try:
        agent, seen = agent_with_probe(model, cli_children)
        assert await model.prewarm(agent)

        result = await agent.run("over the bridge")

        assert source_of(result) == "spare"
        assert result.output == "tool said p"  # the spare's router was bound to this run when it was claimed
        assert seen
    finally:
        await model.aclose()  # the leak guard then checks that no bridge process or IPC file is left
