"""Spares in a ``run_sync`` program, through the real CLI and the offline backend: once the program's event loop is
seen paused between calls, a call that asks for a spare returns only once the spare's CLI process exists, and the
next new conversation runs on it; a spare still connecting while the loop is paused is stopped by
``session_idle_timeout``, by ``close()`` and at exit, leaving no process (the CLI's own included: the leak guard
checks every descendant). The pool's logic is tested on stand-in sessions in ``test_paused_loop_spares.py``."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model._sessions import pool as pool_module
from claudecode_model._sessions.loop_pauses import pauses
from claudecode_model.testing import OfflineBackend
from tests._support.agents import agent_with_probe
from tests._support.polling import until
from tests._support.processes import cli_children, environment, live_children, process_table
from tests._support.responses import source_of
from tests.model.test_spares_cli import tool_then_text

pytestmark = pytest.mark.cli

IDLE_TIMEOUT = 3.0
KEEP = 3
"""Room for two conversations' kept CLIs and a spare: a spare is admitted only where no kept session has to leave for
it."""
NOT_REWOUND = ClaudeCodeModelSettings(claude_code_builtin_tools=["Read"])
"""A CLI with built-in tools is never rewound for a new conversation: the spares serve them."""


def probe_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the agent's probe tool once (not the built-in Read tool offered too), then answer with what it returned."""
    probes = [tool for tool in info.function_tools if tool.name.endswith("probe")]
    return tool_then_text(messages, replace(info, function_tools=probes))


@pytest.fixture
def backend(claude_backend: OfflineBackend) -> OfflineBackend:
    claude_backend.set_brain(FunctionModel(probe_then_text))
    return claude_backend


@pytest.fixture
def no_bound_on_the_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spawn, not the bound on the wait for it, ends a call here (the bound is for a spawn that hangs; a loaded
    test machine may take longer than it to spawn a CLI)."""
    monkeypatch.setattr(pool_module, "HEAD_START_SECONDS", 60.0)


def first_call_then_pause(agent: Agent[None, str]) -> None:
    """The program's first new conversation, then a pause long enough for its spare's delay to end unseen."""
    assert source_of(agent.run_sync("one")) == "fresh"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = asyncio.get_event_loop()  # the one run_sync ran on, set for the thread
    until(lambda: pauses(loop), "the pools' clock saw the loop paused when the spare's delay ended")


@pytest.mark.usefixtures("run_sync_loop", "no_bound_on_the_spawn")
def test_a_run_sync_programs_new_conversation_runs_on_a_spare_spawned_before_the_last_call_returned(
    backend: OfflineBackend,
) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), keep_sessions=KEEP, settings=NOT_REWOUND)
    try:
        agent, seen = agent_with_probe(model, cli_children)
        first_call_then_pause(agent)
        before = set(cli_children())

        second = agent.run_sync("two")
        at_return = {process.pid for process in live_children()}  # the loop does not run now: nothing starts after

        assert source_of(second) == "spare"  # the first call's spare, started when claimed
        # A CLI starts through its launcher (a shell script, then setpriv), and shows as `claude` once that has
        # exec'ed it: a loaded machine may not have got that far when the call returns.
        until(
            lambda: len(at_return & set(cli_children()) - before) == 2,
            "the second conversation's CLI and the spare its call started were both spawned before it returned",
        )
        spawned = at_return & set(cli_children())

        third = agent.run_sync("three")

        assert source_of(third) == "spare"
        assert third.output == "tool said p"
        assert set(seen[-1]) <= spawned  # no CLI was started for it: it ran on one spawned before
    finally:
        model.close()
    assert not cli_children()


@pytest.mark.usefixtures("run_sync_loop", "no_bound_on_the_spawn")
def test_an_idle_timeout_while_the_loop_is_paused_stops_a_spare_still_connecting(
    backend: OfflineBackend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    model = ClaudeCodeModel(
        env=backend.cli_env(), session_idle_timeout=IDLE_TIMEOUT, keep_sessions=KEEP, settings=NOT_REWOUND
    )
    try:
        agent, _ = agent_with_probe(model, cli_children)
        first_call_then_pause(agent)
        agent.run_sync("two")
        [spare] = model._resources.pool._spares
        assert spare.starting is not None  # spawned; it connects only while the loop runs

        until(lambda: not cli_children(), "the clock stopped the idle CLIs", seconds=IDLE_TIMEOUT + 30)

        assert not spare.task.done()  # stopped while still connecting
        after = agent.run_sync("three")
        assert source_of(after) == "fresh"  # the stopped spare is not waited for
        assert after.output == "tool said p"
        assert [record.getMessage() for record in caplog.records] == []  # stopped on purpose: nothing to report
    finally:
        model.close()
    assert not cli_children()


def test_program_exit_with_a_spare_still_connecting_leaves_no_process(backend: OfflineBackend, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    script = tmp_path / "exit_while_a_spare_connects.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, json, sys, time, warnings
            from pydantic_ai import Agent
            from claudecode_model import ClaudeCodeModel
            from claudecode_model._sessions import pool as pool_module
            from claudecode_model._sessions.loop_pauses import pauses

            pool_module.HEAD_START_SECONDS = 60.0  # the spawn ends the call's wait, however loaded the machine
            model = ClaudeCodeModel(
                env=json.loads(sys.argv[1]),
                keep_sessions=3,
                settings={"claude_code_builtin_tools": ["Read"]},  # never rewound: the spares serve it
            )
            agent = Agent(model, instructions="x")
            agent.run_sync("one")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                loop = asyncio.get_event_loop()
            deadline = time.monotonic() + 30
            while not pauses(loop):
                assert time.monotonic() < deadline, "the loop was not seen paused"
                time.sleep(0.02)
            agent.run_sync("two")
            [spare] = model._resources.pool._spares
            assert spare.starting is not None and not spare.task.done()
            print("connecting", flush=True)
            # exit without closing the model or the loop
            """
        )
    )
    env = {**backend.cli_env(), "SPARE_TEST_MARKER": marker}
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(env)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "connecting", done.stderr
    assert done.stderr == ""  # silent: no task destroyed pending, no error of the stopped CLI

    def marked() -> list[int]:  # the CLIs and their own children: they inherit the marker
        return [
            p.pid for p in process_table() if p.alive and any(marker.encode() in item for item in environment(p.pid))
        ]

    deadline = time.monotonic() + 10
    while marked():
        assert time.monotonic() < deadline, f"processes left after the interpreter exited: {marked()}"
        time.sleep(0.05)
