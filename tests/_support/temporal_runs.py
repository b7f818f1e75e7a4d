"""Running agents as Temporal workflows in the test process: one generic workflow, a worker per test.

The workflow looks its agent up by name in :data:`AGENTS` (so that each test builds its own agent, with its own
backend), and runs on the unsandboxed workflow runner, which such per-test agents need: the sandbox re-imports the
workflow's module and would find none of them. ``examples/temporal_workers.py`` runs in the sandbox.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.durable_exec.temporal import AgentPlugin
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

__all__ = ["AGENTS", "AgentRun", "RunOutcome", "RunRequest", "activity_names", "run_workflow", "running_worker"]

AGENTS: dict[str, Agent[None, Any]] = {}
"""The agents :class:`AgentRun` can run, by name."""

_RUN_TIMEOUT = timedelta(seconds=120)


@dataclass
class RunRequest:
    """One agent run: a prompt, or the history of an earlier run with approvals for its deferred tool calls."""

    agent: str
    prompt: str | None
    history: str | None = None
    approve: list[str] = field(default_factory=list)
    model_settings: dict[str, Any] | None = None


@dataclass
class RunOutcome:
    """What a run returns across the workflow boundary."""

    output: str | None
    approvals: list[str]
    messages: str

    def history(self) -> list[ModelMessage]:
        return ModelMessagesTypeAdapter.validate_json(self.messages)


@workflow.defn
class AgentRun:
    @workflow.run
    async def run(self, request: RunRequest) -> RunOutcome:
        agent = AGENTS[request.agent]
        history = ModelMessagesTypeAdapter.validate_json(request.history) if request.history else None
        deferred = DeferredToolResults(approvals=dict.fromkeys(request.approve, True)) if request.approve else None
        result = await agent.run(
            request.prompt,
            message_history=history,
            deferred_tool_results=deferred,
            model_settings=request.model_settings,  # type: ignore[arg-type]
        )
        output = result.output
        if isinstance(output, DeferredToolRequests):
            return RunOutcome(
                None, [call.tool_call_id for call in output.approvals], result.all_messages_json().decode()
            )
        return RunOutcome(str(output), [], result.all_messages_json().decode())


@asynccontextmanager
async def running_worker(client: Client, agent: Agent[None, Any]) -> AsyncIterator[str]:
    """A worker for ``agent`` on a task queue of its own (yielded), registered for :class:`AgentRun`."""
    assert agent.name is not None
    AGENTS[agent.name] = agent
    queue = f"test-{uuid.uuid4().hex[:12]}"
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[AgentRun],
            plugins=[AgentPlugin(agent)],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            yield queue
    finally:
        AGENTS.pop(agent.name, None)


async def run_workflow(client: Client, queue: str, request: RunRequest) -> tuple[RunOutcome, str]:
    """Run ``request`` as a workflow on ``queue``; its outcome and workflow id."""
    workflow_id = f"run-{uuid.uuid4().hex[:12]}"
    outcome = await client.execute_workflow(
        AgentRun.run, request, id=workflow_id, task_queue=queue, execution_timeout=_RUN_TIMEOUT
    )
    return outcome, workflow_id


async def activity_names(client: Client, workflow_id: str) -> list[str]:
    """The activities the workflow scheduled, in order (its recorded history)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
