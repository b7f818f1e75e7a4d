"""Real CLI processes stay within the program's idle budget in a synchronous (``run_sync``) program: new
conversations one after another hold at most one busy CLI and two idle ones at any moment, and the idle ones go
after ``session_idle_timeout`` while the program does other work (the pool's clock). Counts and memory are read from
the process table. The async program, bursts and explicit bounds are tested on the in-memory CLI
(``test_idle_bounds.py``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions.idle_budget import DEFAULT_IDLE_CLIS
from claudecode_model.testing import OfflineBackend
from tests._support.polling import wait_until
from tests._support.processes import cli_children, rss_mb

pytestmark = pytest.mark.cli

RUNS = 12
IDLE_TIMEOUT = 20.0

IDLE_CLI_MB = 300
"""An idle CLI's resident memory stays below this (the README gives the figure measured)."""


class CLICounter:
    """Counts this process's CLI children every 10 ms in a thread: the most at once, and the memory of each."""

    def __init__(self) -> None:
        self.most = 0
        self.sizes: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._count, name="cli-counter", daemon=True)

    def __enter__(self) -> CLICounter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _count(self) -> None:
        while not self._stop.wait(0.01):
            pids = cli_children()
            self.most = max(self.most, len(pids))
            self.sizes += [size for pid in pids if (size := rss_mb(pid))]


@pytest.fixture
def sync_model(claude_backend: OfflineBackend, run_sync_loop: None) -> Iterator[ClaudeCodeModel]:
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_idle_timeout=IDLE_TIMEOUT)
    yield model
    model.close()


def test_a_sync_program_of_new_conversations_holds_one_cli_and_stops_it_when_idle(
    sync_model: ClaudeCodeModel, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING)
    agent = Agent(sync_model)
    with CLICounter() as counter:
        for index in range(RUNS):
            assert agent.run_sync(f"one-off {index}").output
    print(f"{RUNS} runs: at most {counter.most} CLIs, RSS {min(counter.sizes):.0f}-{max(counter.sizes):.0f} MB each")
    assert counter.most <= DEFAULT_IDLE_CLIS + 1
    assert all(size < IDLE_CLI_MB for size in counter.sizes), max(counter.sizes)
    # The conversations after the first ran on its CLI, rewound (or on the first one's spare, had it started first).
    assert 1 <= len(cli_children()) <= DEFAULT_IDLE_CLIS

    # Other work without the event loop: only the pool's clock can stop them now.
    assert wait_until(lambda: not cli_children(), timeout=IDLE_TIMEOUT + 20)

    # The next call finds the stopped sessions tidied up, and starts a new CLI.
    assert agent.run_sync("one more").output
    assert [record.getMessage() for record in caplog.records] == []  # stopped on purpose: nothing to report
