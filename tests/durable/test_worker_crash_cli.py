"""The scenario that matters: a worker dies mid-run, another finishes the run, and the conversation goes on there.

Two worker processes (``examples/durable_workers.py``) share one real PostgreSQL server for DBOS's workflow state,
the Claude Code session store and a ledger of tool runs. Both point their Claude Code CLI at this test's offline
backend, each with its own ``CLAUDE_CONFIG_DIR``. Worker A starts a run that chains three tools; the backend holds
A's API request that follows the second tool's result, and the test kills A's whole process group with SIGKILL.
Worker B then recovers A's workflow and finishes it; a follow-up turn on B continues the Claude Code session.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

if TYPE_CHECKING:
    from tests._support.postgres import PostgresServer

    from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

pytest.importorskip("dbos")

WORKER = Path(__file__).resolve().parents[2] / "examples" / "durable_workers.py"
CHAIN = ("one", "two", "three")
_WORKER_TIMEOUT = 240


class ChainBrain:
    """Calls one, two and three in turn (each with the previous result), then answers with the last result.

    The first API request that carries the result of ``two`` is held until :attr:`release` is set: that is where the
    test kills worker A. Follow-up prompts are answered with how many prompts and tool results the brain saw.
    """

    def __init__(self) -> None:
        self.held = threading.Event()
        self.release = threading.Event()
        self._holding = True

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(prompts) > 1:
            return ModelResponse(parts=[TextPart(f"follow-up after {len(returns)} tool results: {prompts[-1]}")])
        done = [_tool_suffix(p.tool_name) for p in returns]
        if done == ["one", "two"] and self._holding:
            self._holding = False
            self.held.set()
            await asyncio.to_thread(self.release.wait, _WORKER_TIMEOUT)
        if len(done) == len(CHAIN):
            return ModelResponse(parts=[TextPart(f"chain result: {returns[-1].content}")])
        step = CHAIN[len(done)]
        [tool] = [t for t in info.function_tools if _tool_suffix(t.name) == step]
        value = int(str(returns[-1].content)) if returns else 1
        return ModelResponse(parts=[ToolCallPart(tool.name, {"n": value})])


def _tool_suffix(name: str) -> str:
    return name.rsplit("__", 1)[-1]


def _spawn(worker: str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as output:
        return subprocess.Popen(
            [sys.executable, str(WORKER), "--worker", worker, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,  # its own process group: SIGKILL to the group takes its CLI along
        )


def _finish(process: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = process.wait(timeout=_WORKER_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError(f"worker timed out:\n{log.read_text()[-4000:]}") from None
    assert code == 0, f"worker exited with {code}:\n{log.read_text()[-4000:]}"


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _ledger(dsn: str) -> list[tuple[str, str, int]]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT tool, worker, input FROM tool_runs ORDER BY id").fetchall()
    return [(str(tool), str(worker), int(value)) for tool, worker, value in rows]


def _session_of(messages: list[Any]) -> str:
    [last] = [m for m in messages[-1:] if m["kind"] == "response"]
    session_id = last["provider_details"]["session_id"]
    assert isinstance(session_id, str)
    return session_id


@pytest.mark.xfail(
    strict=True,
    reason=(
        "needs pydantic-ai to run the agent's tools (issue 14): today the whole Claude Code loop, tool calls "
        "included, is one DBOS model-request step, so the recovered step runs tools one and two again on worker B"
    ),
)
async def test_a_run_survives_its_worker_and_the_conversation_continues_on_another(
    claude_backend: OfflineBackend, postgres_server: PostgresServer, postgres_db: str, tmp_path: Path
):
    brain = ChainBrain()
    claude_backend.set_brain(FunctionModel(brain))
    dsn = postgres_server.dsn(postgres_db)

    def worker_env(name: str) -> dict[str, str]:
        config_dir = tmp_path / f"config-{name}"
        config_dir.mkdir()
        return {**os.environ, **claude_backend.cli_env(config_dir=config_dir), "DURABLE_DATABASE_URL": dsn}

    # Worker A starts the run and is killed while Claude answers the second tool's result.
    log_a = tmp_path / "worker-a.log"
    worker_a = _spawn("worker-a", ["start", "--workflow-id", "chain-1", "Start the chain."], worker_env("a"), log_a)
    try:
        held = await asyncio.to_thread(brain.held.wait, _WORKER_TIMEOUT)
        assert held, f"worker A never reached the third step:\n{log_a.read_text()[-4000:]}"
        assert _ledger(dsn) == [("one", "worker-a", 1), ("two", "worker-a", 11)]
        os.killpg(worker_a.pid, signal.SIGKILL)
        worker_a.wait()
    finally:
        brain.release.set()
        if worker_a.poll() is None:
            os.killpg(worker_a.pid, signal.SIGKILL)
            worker_a.wait()
    # Nothing of worker A survives it: no CLI orphan in its process group.
    assert await _eventually(lambda: not _group_members(worker_a.pid)), _group_members(worker_a.pid)

    # Worker B recovers A's workflow and finishes it.
    log_b = tmp_path / "worker-b.log"
    recovered = tmp_path / "recovered.json"
    env_b = worker_env("b")
    worker_b = _spawn("worker-b", ["recover", "worker-a", "--out", str(recovered)], env_b, log_b)
    await asyncio.to_thread(_finish, worker_b, log_b)
    result = json.loads(recovered.read_text())
    assert result["workflow_id"] == "chain-1"
    assert result["output"] == "chain result: 1123"
    session_id = _session_of(result["messages"])

    # A follow-up turn on worker B (a new process, so nothing is live) continues the same Claude Code session
    # from the store: the backend sees the whole earlier conversation and nothing is replayed.
    follow_env = worker_env("b-follow-up")
    followed = tmp_path / "followed.json"
    follow_up = _spawn(
        "worker-b", ["follow-up", "--messages", str(recovered), "--out", str(followed), "Thanks!"], follow_env, log_b
    )
    await asyncio.to_thread(_finish, follow_up, log_b)
    answer = json.loads(followed.read_text())
    assert answer["output"] == "follow-up after 3 tool results: Thanks!"
    assert _session_of(answer["messages"]) == session_id
    assert claude_backend.requests[-1].user_texts()[0] == "Start the chain."
    assert not _transcripts(Path(follow_env["CLAUDE_CONFIG_DIR"])), "the follow-up replayed the history"

    # Each tool ran exactly once: one and two on A (their steps were recorded before it died), three on B.
    assert _ledger(dsn) == [("one", "worker-a", 1), ("two", "worker-a", 11), ("three", "worker-b", 112)]


def _transcripts(config_dir: Path) -> list[Path]:
    return list(config_dir.glob("projects/*/*.jsonl"))


async def _eventually(check: Any, within: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return bool(check())


def test_the_worker_example_refuses_to_start_without_a_database():
    env = {key: value for key, value in os.environ.items() if key != "DURABLE_DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, str(WORKER), "--worker", "w", "start", "--workflow-id", "x", "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert re.search(r"set DURABLE_DATABASE_URL", done.stderr)
