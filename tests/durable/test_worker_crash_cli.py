"""The scenario that matters: a worker dies mid-run, another finishes the run, and the conversation goes on there.

Two worker processes (``examples/durable_workers.py``) share one real PostgreSQL server for DBOS's workflow state,
the Claude Code session store and a ledger of tool runs. Both point their Claude Code CLI at this test's offline
backend, each with its own ``CLAUDE_CONFIG_DIR``. Worker A starts a run that chains three tools; the backend holds
A's API request that follows the second tool's result, and the test kills A's whole process group with SIGKILL.
Worker B then recovers A's workflow and finishes it; a follow-up turn on B continues the Claude Code session.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from pydantic_ai.models.function import FunctionModel

from claudecode_model.testing import OfflineBackend
from tests._support.agents import last_session_id
from tests._support.brains import CLI_CONTINUATION_PROMPT, ChainBrain
from tests._support.workers import CrashScenario, Ledger, finish_worker, kill_worker, spawn_worker, survivors_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests._support.postgres import PostgresServer

# Under xdist one worker runs the whole module (tests/_support/worker_groups.py): every test reads the one scenario
# its module fixture plays, which each worker given any of its tests would otherwise play again.
pytestmark = pytest.mark.cli


WORKER = Path(__file__).resolve().parents[2] / "examples" / "durable_workers.py"
_WORKER_TIMEOUT = 240


def _spawn(worker: str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return spawn_worker([str(WORKER), "--worker", worker, *args], env, log)


def _ledger(dsn: str) -> Ledger:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT tool, worker, input FROM tool_runs ORDER BY id").fetchall()
    return [(str(tool), str(worker), int(value)) for tool, worker, value in rows]


@pytest.fixture(scope="module")
def scenario(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashScenario]:
    """Worker A starts the run and is killed while Claude answers the second tool's result; worker B recovers the
    workflow, then continues the conversation in a new process."""
    root = tmp_path_factory.mktemp("scenario")
    database = postgres_server.create_database()
    dsn = postgres_server.dsn(database)
    brain = ChainBrain(hold_for=_WORKER_TIMEOUT)
    with OfflineBackend(FunctionModel(brain.answer)) as backend:

        def worker_env(name: str) -> dict[str, str]:
            config_dir = root / f"config-{name}"
            config_dir.mkdir()
            return {**os.environ, **backend.cli_env(config_dir=config_dir), "DURABLE_DATABASE_URL": dsn}

        log_a = root / "worker-a.log"
        worker_a = _spawn("worker-a", ["start", "--workflow-id", "chain-1", "Start the chain."], worker_env("a"), log_a)
        try:
            assert brain.held.wait(_WORKER_TIMEOUT), f"worker A never reached the third step:\n{log_a.read_text()}"
            ledger_when_killed = _ledger(dsn)
        finally:
            kill_worker(worker_a)  # before Claude's answer is released: A dies waiting for it
            brain.release.set()
        survivors = survivors_of(worker_a)

        log_b = root / "worker-b.log"
        recovered = root / "recovered.json"
        recover = _spawn("worker-b", ["recover", "worker-a", "--out", str(recovered)], worker_env("b"), log_b)
        finish_worker(recover, log_b, _WORKER_TIMEOUT)

        follow_env = worker_env("b-follow-up")
        followed = root / "followed.json"
        arguments = ["follow-up", "--messages", str(recovered), "--out", str(followed), "Thanks!"]
        finish_worker(_spawn("worker-b", arguments, follow_env, log_b), log_b, _WORKER_TIMEOUT)
        yield CrashScenario(
            ledger_when_killed=ledger_when_killed,
            survivors_of_a=survivors,
            finished=json.loads(recovered.read_text()),
            followed=json.loads(followed.read_text()),
            follow_up_request=backend.requests[-1],
            follow_up_transcripts=list(Path(follow_env["CLAUDE_CONFIG_DIR"]).glob("projects/*/*.jsonl")),
            ledger=_ledger(dsn),
        )
    postgres_server.drop_database(database)


def test_worker_a_died_after_its_second_tool_call_leaving_nothing_running(scenario: CrashScenario):
    assert scenario.ledger_when_killed == [("one", "worker-a", 1), ("two", "worker-a", 11)]
    assert scenario.survivors_of_a == []  # no CLI orphan: the whole process group is gone


def test_worker_b_recovers_the_workflow_and_finishes_it_with_the_right_answer(scenario: CrashScenario):
    assert scenario.finished["workflow_id"] == "chain-1"
    assert scenario.finished["output"] == "chain result: 1123"
    assert ("three", "worker-b", 112) in scenario.ledger


def test_a_follow_up_on_worker_b_continues_the_same_session_through_the_store(scenario: CrashScenario):
    assert scenario.followed["output"] == "follow-up after 3 tool results: Thanks!"
    assert last_session_id(scenario.followed["messages"]) == last_session_id(scenario.finished["messages"])
    prompts = [text for text in scenario.follow_up_request.user_texts() if text != CLI_CONTINUATION_PROMPT]
    assert prompts == ["Start the chain.", "Thanks!"]
    assert scenario.follow_up_transcripts == []  # resumed from the store, nothing replayed on this worker


def test_each_tool_ran_exactly_once(scenario: CrashScenario):
    # One and two on A (their steps were recorded before it died), three on B.
    assert scenario.ledger == [("one", "worker-a", 1), ("two", "worker-a", 11), ("three", "worker-b", 112)]


def test_the_worker_example_refuses_to_start_without_a_database():
    env = {key: value for key, value in os.environ.items() if key != "DURABLE_DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, str(WORKER), "--worker", "w", "start", "--workflow-id", "x", "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert re.search(r"set DURABLE_DATABASE_URL", done.stderr)
