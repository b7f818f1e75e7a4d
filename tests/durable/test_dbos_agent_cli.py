"""pydantic-ai's ``DBOSAgent`` around an agent on ``ClaudeCodeModel``: the real CLI, the offline backend, DBOS on a
real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import PydanticAIDeprecationWarning
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, PostgresSessionStore
from tests._support.brains import weather_brain

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from claudecode_model.testing import OfflineBackend
    from tests._support.postgres import PostgresServer

pytestmark = pytest.mark.cli


@pytest.fixture
def dbos_system_db(postgres_server: PostgresServer, postgres_db: str) -> Iterator[str]:
    """DBOS configured on a fresh database of the test server (launched by the test, destroyed after it)."""
    from dbos import DBOS

    url = postgres_server.sqlalchemy_url(postgres_db)
    DBOS(config={"name": "claudecode_test", "system_database_url": url, "application_version": "test"})
    yield url
    DBOS.destroy(destroy_registry=True)


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

    if integration == "DBOSAgent":
        with pytest.warns(PydanticAIDeprecationWarning, match="DBOSDurability"):
            durable = DBOSAgent(agent)
        run = durable.run
    else:

        @DBOS.workflow()
        async def ask(prompt: str) -> str:
            return (await agent.run(prompt)).output

        run = ask

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

        @DBOS.workflow()
        async def ask(prompt: str) -> str:
            return (await agent.run(prompt)).output

        DBOS.launch()
        try:
            output = await ask("Weather in Paris?")
        finally:
            await model.aclose()
        [workflow] = await DBOS.list_workflows_async()
    finally:
        DBOS.destroy(destroy_registry=True)

    assert output == "The weather: rainy in Paris"
    assert workflow.status == "SUCCESS"
