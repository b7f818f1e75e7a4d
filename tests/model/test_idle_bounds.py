"""Idle CLI sessions follow the documented bounds by time, on the in-memory CLI: the surplus over ``keep_sessions``
goes within its grace period while an async program waits, and an idle session goes after ``session_idle_timeout``
while a synchronous one does other work (the pool's clock). ``test_idle_bounds_cli.py`` keeps the synchronous
program's surplus with real processes and their memory."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model import _resources as resources_module
from claudecode_model.testing import ScriptedCLI
from tests._support.polling import wait_for, wait_until

RUNS = 20
GRACE = 3.0
"""The surplus grace period of these tests (60 s by default)."""
KEPT = resources_module.DEFAULT_KEEP_SESSIONS
SPARES = 1
"""The default ``spare_sessions``: one CLI started ahead for the agent's next new conversation."""
ROOM = RUNS + 2
"""``max_processes`` for the tests that count the surplus: room for all of it."""


def answering() -> ScriptedCLI:
    return ScriptedCLI(lambda message: "ok")


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources_module, "SURPLUS_IDLE_SECONDS", GRACE)


async def test_an_async_program_is_trimmed_to_keep_sessions_while_it_waits(short_grace: None):
    cli = answering()
    model = ClaudeCodeModel(cli_transports=cli, max_processes=ROOM)
    agent = Agent(model)
    try:
        for index in range(RUNS):
            await agent.run(f"one-off {index}")
        assert cli.live > KEPT + SPARES  # the surplus is kept for its grace period

        # The program goes on with other work on its loop; no request comes.
        assert await wait_for(lambda: cli.live <= KEPT + SPARES, within=GRACE + 20)
        await asyncio.sleep(1)  # and the kept ones stay
        assert cli.live == KEPT + SPARES
    finally:
        await model.aclose()
    assert cli.live == 0


def test_a_sync_program_stops_an_idle_cli_after_session_idle_timeout(
    run_sync_loop: None, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING)
    cli = answering()
    model = ClaudeCodeModel(cli_transports=cli, session_idle_timeout=1.0, spare_sessions=0)
    try:
        first = Agent(model).run_sync("hello")
        assert cli.live == 1

        assert wait_until(lambda: cli.live == 0, timeout=15)  # no loop runs meanwhile

        again = Agent(model).run_sync("and again", message_history=first.all_messages())
        assert again.output
        assert (again.all_messages()[-1].provider_details or {})["session_source"] != "live"  # type: ignore[union-attr]
        assert [record.getMessage() for record in caplog.records] == []
    finally:
        model.close()
