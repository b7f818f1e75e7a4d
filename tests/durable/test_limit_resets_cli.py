"""Durable runs that hit a usage limit wait out its reset and finish, without a failed workflow (issue 39).

The offline backend refuses the first request with the subscription's 5-hour limit, whose reset is shortened to
about 20 s from now; the next request is answered. Under Temporal the model activity fails with the error's
``retry_after`` as its ``next_retry_delay`` (pydantic-ai's integration; capped by the retry policy's
``maximum_interval``), so Temporal runs it again after the reset. Under DBOS the request waits inside its step
(``claude_code_limit_reset_wait``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import Failure
from tests._support.dbos_runs import launch_and_ask
from tests._support.limits import limit_headers, subscription_env
from tests._support.postgres import dbos_configured
from tests._support.temporal_runs import RunRequest, run_workflow, running_worker

if TYPE_CHECKING:
    from collections.abc import Iterator

    from temporalio.client import Client

    from claudecode_model.testing import OfflineBackend
    from tests._support.postgres import PostgresServer
    from tests._support.temporal import TemporalDevServer

pytestmark = pytest.mark.cli

RESET_IN = 20
ANSWER = "Answered once the limit had reset."


def limit_reached_until(backend: OfflineBackend) -> int:
    """Make the backend refuse the next request with the 5-hour limit resetting in ``RESET_IN`` s; the reset time."""
    resets = int(time.time()) + RESET_IN
    headers = limit_headers(resets)
    backend.set_brain(ANSWER)
    backend.fail_next(Failure.http(429, "rate limited", error_type="rate_limit_error", headers=headers))
    return resets


@pytest.fixture
async def temporal_client(temporal_server: TemporalDevServer) -> Client:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client

    from claudecode_model.temporal import ClaudeCodePlugin

    return await Client.connect(temporal_server.address, plugins=[PydanticAIPlugin(), ClaudeCodePlugin()])


async def test_a_temporal_run_waits_out_the_reset(claude_backend: OfflineBackend, temporal_client: Client):
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    resets = limit_reached_until(claude_backend)
    model = ClaudeCodeModel(env=subscription_env(claude_backend), spare_sessions=0)
    agent = Agent(model, name="limited_temporal_agent", capabilities=[TemporalDurability()])
    try:
        async with running_worker(temporal_client, agent) as queue:
            outcome, _ = await run_workflow(temporal_client, queue, RunRequest("limited_temporal_agent", "hello"))
    finally:
        await model.aclose()

    assert outcome.output == ANSWER  # the workflow did not fail
    assert len(claude_backend.requests) == 2  # refused once, asked again once
    assert time.time() >= resets  # not before the reset


@pytest.fixture
def dbos_system_db(postgres_server: PostgresServer, postgres_db: str) -> Iterator[str]:
    with dbos_configured(postgres_server, postgres_db, "claudecode_limits") as url:
        yield url


async def test_a_dbos_run_waits_out_the_reset(claude_backend: OfflineBackend, dbos_system_db: str):
    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    resets = limit_reached_until(claude_backend)
    model = ClaudeCodeModel(
        env=subscription_env(claude_backend), spare_sessions=0, settings={"claude_code_limit_reset_wait": 120}
    )
    agent = Agent(model, name="limited_dbos_agent", capabilities=[DBOSDurability()])

    output = await launch_and_ask(model, agent, "hello")

    assert output == ANSWER
    [workflow] = await DBOS.list_workflows_async()
    assert workflow.status == "SUCCESS"
    assert len(claude_backend.requests) == 2
    assert time.time() >= resets
