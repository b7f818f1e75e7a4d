"""Durable Claude Code agents on several workers: DBOS workflows and Claude Code sessions in one PostgreSQL.

Every worker runs this program with the same ``DURABLE_DATABASE_URL``. A run is a DBOS workflow: each model
request (and, when pydantic-ai runs the agent's tools, each tool call) is a DBOS step recorded in PostgreSQL, so a
run that a dead worker left unfinished is finished by another one without redoing the finished steps. Claude Code's
own session transcripts go to the same database through :class:`~claudecode_model.PostgresSessionStore`, so a
follow-up turn resumes the session on whichever worker gets it.

The agent chains three tools (``one``, ``two``, ``three``); each tool writes a row into ``tool_runs`` (which worker
ran it, with what input), so you can see what ran where and how often.

Usage (``--worker`` names this worker; DBOS calls it the executor id)::

    export DURABLE_DATABASE_URL=postgresql://user@host/agents
    python examples/durable_workers.py --worker worker-a start --workflow-id trip-1 "Start with 1."
    # ... worker-a dies; on another machine:
    python examples/durable_workers.py --worker worker-b recover worker-a --out result.json
    python examples/durable_workers.py --worker worker-b follow-up --messages result.json "And now?"

The Claude Code CLI reads its usual environment (login or ``ANTHROPIC_API_KEY``; the tests point it at the offline
backend with ``ANTHROPIC_BASE_URL``). All workers must run the same code and the same working directory (the session
store keys sessions by it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import psycopg
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessagesTypeAdapter

from claudecode_model import ClaudeCodeModel, PostgresSessionStore, dbos_config

DATABASE_URL = os.environ.get("DURABLE_DATABASE_URL", "")
APP_VERSION = "durable-workers-1"
"""Pinned so that every worker recovers the others' workflows (DBOS otherwise hashes the workflow code)."""

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--worker", required=True, help="this worker's name (the DBOS executor id)")
commands = parser.add_subparsers(dest="command", required=True)
start_command = commands.add_parser("start", help="run the agent as a new durable workflow")
start_command.add_argument("--workflow-id", required=True)
start_command.add_argument("prompt")
recover_command = commands.add_parser("recover", help="finish the workflows a dead worker left unfinished")
recover_command.add_argument("dead_worker")
follow_command = commands.add_parser("follow-up", help="continue a finished run's conversation (durably)")
follow_command.add_argument("--messages", type=Path, required=True, help="a JSON result written by --out")
follow_command.add_argument("prompt")
for command in (start_command, recover_command, follow_command):
    command.add_argument("--out", type=Path, help="write the run's output and messages (JSON) here")

store = PostgresSessionStore(DATABASE_URL) if DATABASE_URL else None
model = ClaudeCodeModel(session_store=store)
agent = Agent(
    model,
    name="chain_agent",
    capabilities=[DBOSDurability()],
    instructions="Call one, then two with one's result, then three with two's result; answer with the last result.",
)


async def record_tool_run(tool: str, value: int) -> None:
    async with await psycopg.AsyncConnection.connect(DATABASE_URL, autocommit=True) as connection:
        await connection.execute(
            "INSERT INTO tool_runs (tool, worker, input) VALUES (%s, %s, %s)",
            (tool, os.environ["DURABLE_WORKER"], value),
        )


@agent.tool_plain
@DBOS.step()
async def one(n: int) -> int:
    """The first link of the chain."""
    await record_tool_run("one", n)
    return n * 10 + 1


@agent.tool_plain
@DBOS.step()
async def two(n: int) -> int:
    """The second link of the chain."""
    await record_tool_run("two", n)
    return n * 10 + 2


@agent.tool_plain
@DBOS.step()
async def three(n: int) -> int:
    """The third link of the chain."""
    await record_tool_run("three", n)
    return n * 10 + 3


@DBOS.workflow(name="chain")
async def chain(prompt: str, history_json: str | None = None) -> dict[str, Any]:
    """One agent run as a workflow; it returns what the next turn needs (plain JSON, as DBOS records it)."""
    history = ModelMessagesTypeAdapter.validate_json(history_json) if history_json else None
    result = await agent.run(prompt, message_history=history)
    return {"output": result.output, "messages": json.loads(result.all_messages_json())}


def recover_workflows_of(dead_worker: str) -> list[Any]:
    """Take over the pending workflows of a worker that is gone.

    DBOS recovers a worker's workflows when a worker with the same executor id starts again; handing them to a
    *different* worker is what DBOS Conductor does for self-hosted fleets, with this same call.
    """
    return DBOS._recover_pending_workflows([dead_worker])


async def main(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["DURABLE_WORKER"] = args.worker
    async with await psycopg.AsyncConnection.connect(DATABASE_URL, autocommit=True) as connection:
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS tool_runs (id serial PRIMARY KEY, tool text NOT NULL, worker text NOT NULL,"
            " input bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())"
        )
    DBOS(
        config=dbos_config(
            "durable_workers", database_url=DATABASE_URL, application_version=APP_VERSION, executor_id=args.worker
        )
    )
    DBOS.launch()
    try:
        match args.command:
            case "start":
                with SetWorkflowID(args.workflow_id):
                    handle = await DBOS.start_workflow_async(chain, args.prompt)
                result: dict[str, Any] = await handle.get_result()
            case "recover":
                handles = recover_workflows_of(args.dead_worker)
                if len(handles) != 1:
                    raise SystemExit(f"expected one workflow of {args.dead_worker} to recover, found {len(handles)}")
                result = await asyncio.to_thread(handles[0].get_result)
                result["workflow_id"] = handles[0].get_workflow_id()
            case "follow-up":
                earlier = json.loads(args.messages.read_text())
                result = await chain(args.prompt, json.dumps(earlier["messages"]))
            case _:
                raise SystemExit(f"unknown command {args.command!r}")
    finally:
        await model.aclose()
        if store is not None:
            await store.aclose()
        DBOS.destroy()
    return result


if __name__ == "__main__":
    arguments = parser.parse_args()
    if not DATABASE_URL:
        sys.exit("set DURABLE_DATABASE_URL to a PostgreSQL URL shared by every worker")
    outcome = asyncio.run(main(arguments))
    if arguments.out is not None:
        arguments.out.write_text(json.dumps(outcome))
    print(outcome["output"])
