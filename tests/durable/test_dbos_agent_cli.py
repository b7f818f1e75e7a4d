"""pydantic-ai's ``DBOSAgent`` around an agent on ``ClaudeCodeModel``: the real CLI, the offline backend, DBOS on a
real PostgreSQL server."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent, AgentRunResult
from pydantic_ai.exceptions import PydanticAIDeprecationWarning
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, PostgresSessionStore
from tests._support.brains import weather_brain
from tests._support.dbos_runs import asking_workflow, launch_and_ask
from tests._support.polling import wait_for
from tests._support.postgres import dbos_configured
from tests._support.responses import details

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

    from claudecode_model.testing import OfflineBackend
    from tests._support.postgres import PostgresServer

pytestmark = pytest.mark.cli


@pytest.fixture
def dbos_system_db(postgres_server: PostgresServer, postgres_db: str) -> Iterator[str]:
    """DBOS configured on a fresh database of the test server (launched by the test, destroyed after it)."""
    with dbos_configured(postgres_server, postgres_db, "claudecode_test") as url:
        yield url


@pytest.fixture
async def store(postgres_server: PostgresServer, postgres_db: str) -> AsyncIterator[PostgresSessionStore]:
    async with PostgresSessionStore(postgres_server.dsn(postgres_db)) as made:
        yield made


@pytest.mark.parametrize("integration", ["DBOSDurability", "DBOSAgent"])
async def test_claude_code_runs_as_a_durable_dbos_workflow(
    claude_backend: OfflineBackend, dbos_system_db: str, store: PostgresSessionStore, integration: str
):
    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSAgent, DBOSDurability

    claude_backend.set_brain(FunctionModel(weather_brain))
    calls: list[str] = []
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_store=store)
    capabilities = [DBOSDurability()] if integration == "DBOSDurability" else []
    agent = Agent(model, name="weather_agent", capabilities=capabilities)

    @agent.tool_plain
    @DBOS.step()
    async def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    run: Callable[[str], Awaitable[str | AgentRunResult[str]]]
    if integration == "DBOSAgent":
        with pytest.warns(PydanticAIDeprecationWarning, match="DBOSDurability"):
            durable = DBOSAgent(agent)
        run = durable.run
    else:
        run = asking_workflow(agent)

    DBOS.launch()
    try:
        result = await run("What is the weather in Paris?")
    finally:
        await model.aclose()

    output = result if isinstance(result, str) else result.output
    assert output == "The weather: sunny in Paris"
    assert calls == ["Paris"]
    [workflow] = await DBOS.list_workflows_async()
    assert workflow.status == "SUCCESS"
    steps = [step["function_name"] for step in await DBOS.list_workflow_steps_async(workflow.workflow_id)]
    assert any(name.startswith("weather_agent") and "model.request" in name for name in steps), steps


async def test_a_durable_run_on_the_embedded_sqlite_default(claude_backend: OfflineBackend, tmp_path: Path):
    """One machine needs no database server: DBOS keeps the workflow in a SQLite file."""
    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    from claudecode_model import dbos_config

    DBOS(config=dbos_config("claudecode_sqlite", database_url=tmp_path / "dbos.sqlite", application_version="t"))
    try:
        claude_backend.set_brain(FunctionModel(weather_brain))
        model = ClaudeCodeModel(env=claude_backend.cli_env())
        agent = Agent(model, name="sqlite_agent", capabilities=[DBOSDurability()])

        @agent.tool_plain
        @DBOS.step()
        async def weather(city: str) -> str:
            """The weather in a city."""
            return f"rainy in {city}"

        output = await launch_and_ask(model, agent, "Weather in Paris?")
        [workflow] = await DBOS.list_workflows_async()
    finally:
        DBOS.destroy(destroy_registry=True)

    assert output == "The weather: rainy in Paris"
    assert workflow.status == "SUCCESS"


@pytest.mark.parametrize("decision", ["denied", "override"])
async def test_a_decision_on_a_built_in_call_holds_in_a_durable_run_taken_up_from_the_session_store(
    claude_backend: OfflineBackend,
    dbos_system_db: str,
    store: PostgresSessionStore,
    tmp_path: Path,
    decision: str,
    caplog: pytest.LogCaptureFixture,
):
    """The run that asked for approval and the run that carries the decision are two DBOS workflows; the turn that
    waited is gone in between (the model closed, as on a restarted worker), so the session is branched from the
    store at the deferred call. Only what the person decided happens.

    The first workflow waits until the CLI wrote the reply to its transcript (which the store mirrors): a worker that
    dies before that has its history replayed instead ("A turn cut short by a crash" in docs/scaling.md)."""
    from dbos import DBOS
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    from claudecode_model import BuiltinToolApprovals
    from tests.agentrun.test_builtin_approvals_cli import BASH

    claude_backend.set_brain(BASH.brain(tmp_path))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_store=store, spare_sessions=0)
    agent = Agent(
        model,
        name="approval_agent",
        output_type=[str, DeferredToolRequests],
        toolsets=[BuiltinToolApprovals(["Bash"])],
        model_settings=ClaudeCodeModelSettings({"claude_code_cwd": str(tmp_path)}),
        capabilities=[DBOSDurability()],
    )
    denial = "Not on this machine, said the person."

    @DBOS.workflow()
    async def ask(prompt: str) -> str:
        result = await agent.run(prompt)
        assert isinstance(result.output, DeferredToolRequests)
        [call] = result.output.approvals
        reply = details(result.all_messages()[-1])
        assert await wait_for(lambda: written(claude_backend, reply["session_id"], reply["resume_session_at"]))
        return json.dumps(
            {"call": call.tool_call_id, "history": ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode()}
        )

    @DBOS.workflow()
    async def decide(asked: str) -> str:
        spec = json.loads(asked)
        choice = (
            ToolDenied(denial)
            if decision == "denied"
            else ToolApproved(override_args={"command": "echo person >> log.txt"})
        )
        history = ModelMessagesTypeAdapter.validate_json(spec["history"])
        results = DeferredToolResults(approvals={spec["call"]: choice})
        return str((await agent.run(message_history=history, deferred_tool_results=results)).output)

    DBOS.launch()
    try:
        asked = await ask("do it")
        await model.aclose()  # the waiting turn is gone, as with a worker that restarted
        with caplog.at_level(logging.DEBUG, logger="claudecode_model"):
            output = await decide(asked)
    finally:
        await model.aclose()

    log = tmp_path / "log.txt"
    [result] = [r for r in claude_backend.requests[-1].tool_results() if r.tool_use_id == json.loads(asked)["call"]]
    if decision == "denied":
        assert not log.exists()
        assert (result.text, result.is_error) == (denial, True)
        assert output == f"tool said: {denial}"
    else:
        assert log.read_text() == "person\n"
        assert not result.is_error
    assert all(workflow.status == "SUCCESS" for workflow in await DBOS.list_workflows_async())
    assert "to take up tool call" in caplog.text  # branched from the store, not replayed


def written(backend: OfflineBackend, session_id: str, entry: str) -> bool:
    """Whether the CLI wrote transcript entry ``entry`` of ``session_id`` to its disk."""
    config = Path(backend.cli_env()["CLAUDE_CONFIG_DIR"])
    return any(entry in path.read_text() for path in config.glob(f"projects/*/{session_id}.jsonl"))
