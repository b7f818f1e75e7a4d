"""A Temporal worker dies mid-run, another finishes the run, and the conversation goes on from the session store.

A real Temporal dev server, and worker processes running ``examples/temporal_workers.py`` (its workflow in Temporal's
sandbox): they share a SQLite session store and a ledger of tool runs, and point their Claude Code CLI at this test's
offline backend, each with its own ``CLAUDE_CONFIG_DIR``. Worker A takes a run that chains three tools; the backend
holds A's API request that follows the second tool's result, and the test kills A's whole process group with SIGKILL.
Temporal sees the model-request activity stop heartbeating and gives it to worker B, which finishes the run. A
follow-up turn then runs on worker C, which has never seen the session.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic_ai.models.function import FunctionModel

from claudecode_model.testing import OfflineBackend
from tests._support.agents import last_session_id
from tests._support.brains import CLI_CONTINUATION_PROMPT, ChainBrain
from tests._support.workers import CrashScenario, Ledger, finish_worker, kill_worker, spawn_worker, survivors_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests._support.temporal import TemporalDevServer

# Under xdist one worker runs the whole module (tests/_support/worker_groups.py): every test reads the one scenario
# its module fixture plays, which each worker given any of its tests would otherwise play again.
pytestmark = pytest.mark.cli

PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "temporal_workers.py"
_TIMEOUT = 240


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    """Stop a worker the way an orchestrator does (SIGTERM: it closes its CLI processes and exits)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    finish_worker(process, log, _TIMEOUT)


def _ledger(path: Path) -> Ledger:
    if not path.exists():
        return []
    with sqlite3.connect(path) as ledger:
        rows = ledger.execute("SELECT tool, worker, input FROM tool_runs ORDER BY rowid").fetchall()
    return [(str(tool), str(worker), int(value)) for tool, worker, value in rows]


@pytest.fixture(scope="module")
def scenario(temporal_server: TemporalDevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashScenario]:
    root = tmp_path_factory.mktemp("temporal-scenario")
    ledger = root / "tool_runs.db"
    brain = ChainBrain(hold_for=_TIMEOUT)
    started: list[subprocess.Popen[bytes]] = []
    with OfflineBackend(FunctionModel(brain.answer)) as backend:

        def env(name: str) -> dict[str, str]:
            config_dir = root / f"config-{name}"
            config_dir.mkdir(exist_ok=True)
            return {
                **os.environ,
                **backend.cli_env(config_dir=config_dir),
                "TEMPORAL_ADDRESS": temporal_server.address,
                "CLAUDE_SESSIONS_DB": str(root / "sessions.db"),
                "TOOL_RUNS_DB": str(ledger),
            }

        def spawn(args: list[str], name: str) -> subprocess.Popen[bytes]:
            process = spawn_worker([str(PROGRAM), *args], env(name), root / f"{name}.log")
            started.append(process)
            return process

        try:
            worker_a = spawn(["worker", "--name", "worker-a"], "a")
            run = spawn(["run", "--workflow-id", "chain-1", "--out", str(root / "run.json"), "Start the chain."], "run")
            assert brain.held.wait(_TIMEOUT), f"A never reached the third request:\n{(root / 'a.log').read_text()}"
            ledger_when_killed = _ledger(ledger)
            kill_worker(worker_a)
            brain.release.set()
            survivors = survivors_of(worker_a)

            worker_b = spawn(["worker", "--name", "worker-b"], "b")
            finish_worker(run, root / "run.log", _TIMEOUT)
            _stop(worker_b, root / "b.log")

            worker_c = spawn(["worker", "--name", "worker-c"], "c")
            follow_args = ["run", "--workflow-id", "chain-2", "--messages", str(root / "run.json")]
            follow = spawn([*follow_args, "--out", str(root / "follow.json"), "Thanks!"], "follow")
            finish_worker(follow, root / "follow.log", _TIMEOUT)
            _stop(worker_c, root / "c.log")
        finally:
            brain.release.set()
            for process in started:
                kill_worker(process)
        yield CrashScenario(
            ledger_when_killed=ledger_when_killed,
            survivors_of_a=survivors,
            finished=json.loads((root / "run.json").read_text()),
            followed=json.loads((root / "follow.json").read_text()),
            follow_up_request=backend.requests[-1],
            follow_up_transcripts=list((root / "config-c").glob("projects/*/*.jsonl")),
            ledger=_ledger(ledger),
        )


def test_worker_a_died_after_its_second_tool_call_leaving_nothing_running(scenario: CrashScenario):
    assert scenario.ledger_when_killed == [("one", "worker-a", 1), ("two", "worker-a", 11)]
    assert scenario.survivors_of_a == []  # its CLI is gone with it: the whole process group


def test_worker_b_finishes_the_run_with_the_right_answer(scenario: CrashScenario):
    assert scenario.finished["output"] == "chain result: 1123"
    assert ("three", "worker-b", 112) in scenario.ledger


def test_worker_b_took_the_run_up_from_the_store(scenario: CrashScenario):
    """B's request after the second tool call branched A's session as the store holds it, instead of replaying."""
    responses = [message for message in scenario.finished["messages"] if message["kind"] == "response"]
    sources = [response["provider_details"]["session_source"] for response in responses]
    # Each later request continues the turn its predecessor parked for the tool result ("live"), but B's first: A's
    # parked turn died with A, so B branches the stored session at the pending call ("fork"). When A died before the
    # CLI's eager flush put that reply into the store, B replays the history instead (a race the docs name); either
    # way it is a session of its own, and test_each_tool_ran_exactly_once shows no tool ran again.
    assert sources[:2] == ["fresh", "live"]
    assert sources[2] in ("fork", "replay")
    assert sources[3] == "live"
    assert last_session_id(responses[:3]) != last_session_id(responses[:2])


def test_each_tool_ran_exactly_once(scenario: CrashScenario):
    # One and two on A (their activities were recorded before it died), three on B.
    assert scenario.ledger == [("one", "worker-a", 1), ("two", "worker-a", 11), ("three", "worker-b", 112)]


def test_a_follow_up_on_a_new_worker_continues_the_session_from_the_store(scenario: CrashScenario):
    assert scenario.followed["output"] == "follow-up after 3 tool results: Thanks!"
    assert last_session_id(scenario.followed["messages"]) == last_session_id(scenario.finished["messages"])
    assert scenario.followed["messages"][-1]["provider_details"]["session_source"] == "resume"
    prompts = [text for text in scenario.follow_up_request.user_texts() if text != CLI_CONTINUATION_PROMPT]
    assert prompts == ["Start the chain.", "Thanks!"]
    assert scenario.follow_up_transcripts == []  # resumed from the store, nothing replayed on this worker


def test_the_demo_runs_offline_on_its_own(temporal_server: TemporalDevServer, tmp_path: Path):
    """``demo`` starts its own dev server and offline backend: a chain and a follow-up, nothing else needed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env["HOME"] = str(tmp_path)  # no login, no settings of this machine
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.splitlines()[-2:] == ["The chain gives 1123.", "You said 'Thanks!'; the chain gave 1123."]
