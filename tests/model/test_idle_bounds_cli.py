"""Idle CLI processes follow the documented bounds by time in a synchronous (``run_sync``) program: the surplus over
``keep_sessions`` goes within its grace period while the program does other work, without another request (the
pool's clock stops real processes). Counts and memory are read from the process table. The async program and
``session_idle_timeout`` are tested on the in-memory CLI (``test_idle_bounds.py``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model import _resources as resources_module
from claudecode_model.testing import OfflineBackend
from tests._support.polling import wait_until
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
