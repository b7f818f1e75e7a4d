"""Idle CLI processes follow the documented bounds by time, in async and in synchronous (``run_sync``) programs:
the surplus over ``keep_sessions`` goes within its grace period while the program does other work, without another
request. Counts and memory are read from the process table."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model import _resources as resources_module
from claudecode_model.testing import OfflineBackend
from tests._support.polling import wait_for, wait_until
from tests._support.processes import cli_children, rss_mb

pytestmark = pytest.mark.cli

RUNS = 20
GRACE = 30.0
"""The surplus grace period of these tests (60 s by default)."""
KEPT = resources_module.DEFAULT_KEEP_SESSIONS
SPARES = 1
"""The default ``spare_sessions``: one CLI started ahead for the agent's next new conversation."""
ROOM = RUNS + 2
"""``max_processes`` for the tests that count the surplus: room for all of it (by default the cap comes from the
machine's available memory, and a new process evicts the oldest idle one at the cap)."""


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources_module, "SURPLUS_IDLE_SECONDS", GRACE)


IDLE_CLI_MB = 300
"""An idle CLI's resident memory stays below this (measured 203-245 MB with Claude Code 2.1; the README says
about 210-245 MB, and the default ``max_processes`` assumes 250 MB each)."""


def report_memory(label: str) -> None:
    """Print how many CLIs there are and their resident memory (``-s`` shows it); check each is in bounds."""
    sizes = [rss_mb(pid) for pid in cli_children()]
    if sizes:
        print(f"{label}: {len(sizes)} CLIs, RSS {min(sizes):.0f}-{max(sizes):.0f} MB each")
    assert all(size < IDLE_CLI_MB for size in sizes), sizes


async def test_an_async_program_is_trimmed_to_keep_sessions_while_it_waits(
    claude_backend: OfflineBackend, short_grace: None
):
    model = ClaudeCodeModel(env=claude_backend.cli_env(), max_processes=ROOM)
    agent = Agent(model)
    try:
        for index in range(RUNS):
            await agent.run(f"one-off {index}")
        kept_at_the_end = len(cli_children())
        report_memory("async, after the runs")
        assert kept_at_the_end > KEPT + SPARES  # the surplus is kept for its grace period

        # The program goes on with other work on its loop; no request comes.
        assert await wait_for(lambda: len(cli_children()) <= KEPT + SPARES, within=GRACE + 20)
        await asyncio.sleep(2)  # and the kept ones stay
        assert len(cli_children()) == KEPT + SPARES
        report_memory("async, after the grace period")
    finally:
        await model.aclose()
    assert cli_children() == []


@pytest.fixture
def sync_model(claude_backend: OfflineBackend, short_grace: None, run_sync_loop: None) -> Iterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(env=claude_backend.cli_env(), max_processes=ROOM)
    yield model
    model.close()


def test_a_sync_program_is_trimmed_to_keep_sessions_while_it_does_other_work(
    sync_model: ClaudeCodeModel, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING)
    agent = Agent(sync_model)
    for index in range(RUNS):
        agent.run_sync(f"one-off {index}")
    assert len(cli_children()) > KEPT + SPARES
    report_memory("sync, after the runs")

    # Other work without the event loop: only the pool's clock can stop the surplus now.
    assert wait_until(lambda: len(cli_children()) <= KEPT + SPARES, timeout=GRACE + 20)
    time.sleep(2)
    assert len(cli_children()) <= KEPT + SPARES
    report_memory("sync, after the grace period")

    # The next call finds the stopped sessions tidied up, and a kept one continues its conversation.
    again = agent.run_sync("one more")
    assert again.output
    assert [record.getMessage() for record in caplog.records] == []  # stopped on purpose: nothing to report


def test_a_sync_program_stops_an_idle_cli_after_session_idle_timeout(
    claude_backend: OfflineBackend, run_sync_loop: None, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_idle_timeout=1.0, spare_sessions=0)
    try:
        first = Agent(model).run_sync("hello")
        assert len(cli_children()) == 1

        assert wait_until(lambda: cli_children() == [], timeout=15)  # no loop runs meanwhile

        again = Agent(model).run_sync("and again", message_history=first.all_messages())
        assert again.output
        assert (again.all_messages()[-1].provider_details or {})["session_source"] != "live"  # type: ignore[union-attr]
        assert [record.getMessage() for record in caplog.records] == []
    finally:
        model.close()
