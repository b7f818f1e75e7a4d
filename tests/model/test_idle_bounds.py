"""Idle CLIs stay within their budget, on the in-memory CLI: by default a program holds at most 2 idle CLIs (kept
sessions and spares, over all its models) besides the busy ones; an explicit ``keep_sessions=k`` is the model's own
hard bound, spares included; and an idle session goes after ``session_idle_timeout`` while a synchronous program does
other work (the pool's clock). ``test_idle_bounds_cli.py`` counts real processes and their memory."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions.idle_budget import DEFAULT_IDLE_CLIS, PROGRAM_IDLE_BUDGET
from claudecode_model.testing import ScriptedCLI
from tests._support.polling import wait_for, wait_until

RUNS = 50


def answering() -> ScriptedCLI:
    return ScriptedCLI(lambda message: "ok")


async def test_new_conversations_one_after_another_hold_one_cli_rewound_for_each():
    cli = answering()
    model = ClaudeCodeModel(cli_transports=cli)
    agent = Agent(model, instructions="Answer briefly.")
    try:
        sources = []
        for index in range(RUNS):
            result = await agent.run(f"one-off {index}")
            assert result.output == "ok"
            sources.append((result.all_messages()[-1].provider_details or {})["session_source"])  # type: ignore[union-attr]
        assert sources == ["fresh"] + ["rewound"] * (RUNS - 1)
        assert len(cli.opened) == 1  # the first conversation's spare never started: the kept CLI served the rest
        await asyncio.sleep(0.5)
        assert cli.live == 1

        follow_up = await agent.run("and?", message_history=result.all_messages())
        assert (follow_up.all_messages()[-1].provider_details or {})["session_source"] == "live"  # type: ignore[union-attr]
    finally:
        await model.aclose()
    assert cli.live == 0
    assert len(PROGRAM_IDLE_BUDGET) == 0


async def test_after_a_burst_of_concurrent_runs_the_program_is_back_within_its_budget():
    cli = answering()
    model = ClaudeCodeModel(cli_transports=cli)
    agent = Agent(model)
    try:
        results = await asyncio.gather(*(agent.run(f"burst {index}") for index in range(16)))
        assert {result.output for result in results} == {"ok"}
        assert cli.most_live > DEFAULT_IDLE_CLIS + 1  # they ran at once

        assert await wait_for(lambda: cli.live <= DEFAULT_IDLE_CLIS, within=5)
        await asyncio.sleep(0.5)  # and nothing comes back
        assert cli.live <= DEFAULT_IDLE_CLIS
    finally:
        await model.aclose()
    assert cli.live == 0


async def test_models_share_the_programs_budget_and_kept_sessions_outlast_spares():
    cli = answering()
    first, second = ClaudeCodeModel(cli_transports=cli), ClaudeCodeModel(cli_transports=cli)
    try:
        old = await Agent(first, instructions="First agent.").run("hello")
        new = await Agent(second, instructions="Second agent.").run("hello")
        await asyncio.sleep(0.5)  # the spares' start delay

        assert cli.most_live <= DEFAULT_IDLE_CLIS + 1
        assert cli.live == DEFAULT_IDLE_CLIS
        later = await Agent(second, instructions="Second agent.").run("and?", message_history=new.all_messages())
        earlier = await Agent(first, instructions="First agent.").run("and?", message_history=old.all_messages())
        # The two conversations' CLIs fill the budget: the spares they asked for were the first to go.
        assert (later.all_messages()[-1].provider_details or {})["session_source"] == "live"  # type: ignore[union-attr]
        assert (earlier.all_messages()[-1].provider_details or {})["session_source"] == "live"  # type: ignore[union-attr]
        third = await Agent(second, instructions="Third agent.").run("hello")
        await asyncio.sleep(0.5)
        assert cli.live == DEFAULT_IDLE_CLIS  # its CLI pushed the least recently used conversation's out
        again = await Agent(second, instructions="Second agent.").run("or?", message_history=later.all_messages())
        assert (again.all_messages()[-1].provider_details or {})["session_source"] != "live"  # type: ignore[union-attr]
        assert (third.all_messages()[-1].provider_details or {})["session_source"] == "fresh"  # type: ignore[union-attr]
    finally:
        await first.aclose()
        await second.aclose()
    assert cli.live == 0


@pytest.mark.parametrize("keep", [0, 1, 3])
async def test_an_explicit_keep_sessions_is_a_hard_bound_on_the_models_idle_clis(keep: int):
    cli = answering()
    model = ClaudeCodeModel(cli_transports=cli, keep_sessions=keep)
    agent = Agent(model)
    try:
        for index in range(8):
            await agent.run(f"one-off {index}")
            await asyncio.sleep(0.4)  # the spare's start delay: it is up now, if there is one
            assert cli.live <= keep
        assert cli.most_live <= keep + 1
        assert len(PROGRAM_IDLE_BUDGET) == 0  # its own budget, not the program's
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
