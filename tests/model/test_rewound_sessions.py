"""Which kept CLI a new conversation rewinds, and when none is, on the in-memory CLI (what the real CLI receives and
the follow-ups of both conversations are in ``test_rewound_sessions_cli.py``)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model._history import ledger as ledger_module
from claudecode_model._history.ledger import SessionLedger
from claudecode_model._sessions.session import CLISession
from claudecode_model.testing import ScriptedCLI
from tests._support.polling import wait_for
from tests._support.responses import session_of, source_of


@pytest.fixture
def cli() -> ScriptedCLI:
    return ScriptedCLI(lambda message: "ok")


async def test_only_the_message_that_opens_a_conversation_carries_a_uuid_and_the_rewind_goes_back_to_it(
    cli: ScriptedCLI,
) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    try:
        first = await agent.run("one")
        await agent.run("two", message_history=first.all_messages())  # live: the same conversation goes on
        second = await agent.run("three")

        assert source_of(second) == "rewound"
        opening, follow_up, reopening = cli.received
        assert isinstance(opening.get("uuid"), str)
        assert "uuid" not in follow_up
        assert isinstance(reopening.get("uuid"), str)
        assert reopening["uuid"] != opening["uuid"]
        [rewind] = [request for request in cli.controls if request["subtype"] == "rewind_conversation"]
        assert rewind["target_message_uuid"] == opening["uuid"]
        assert len(cli.opened) == 1
    finally:
        await model.aclose()
    assert cli.live == 0


async def test_the_kept_cli_used_longest_ago_is_rewound(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    try:
        older, newer = await asyncio.gather(agent.run("one"), agent.run("two"))  # two CLIs, both kept
        assert session_of(older) != session_of(newer)
        older = await agent.run("one more", message_history=older.all_messages())  # used since: the newer one is
        assert source_of(older) == "live"  # the one used longest ago now

        third = await agent.run("three")

        assert source_of(third) == "rewound"
        assert session_of(third) == session_of(newer)
        assert source_of(await agent.run("and?", message_history=older.all_messages())) == "live"
    finally:
        await model.aclose()


async def test_a_cli_that_refuses_the_rewind_is_stopped_and_the_conversation_starts_its_own(
    cli: ScriptedCLI, caplog: pytest.LogCaptureFixture
) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    try:
        await agent.run("one")
        cli.refuse_rewinds = "state_changed"
        with caplog.at_level(logging.DEBUG, logger="claudecode_model._turns.acquire"):
            second = await agent.run("two")

        assert source_of(second) == "fresh"
        assert second.output == "ok"
        assert "a kept CLI refused to rewind its conversation (state_changed)" in caplog.text
        assert cli.live == 1  # the refusing CLI was stopped
    finally:
        await model.aclose()
    assert cli.live == 0


async def test_claude_code_session_new_never_takes_a_kept_cli(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    try:
        first = await agent.run("one")
        one_off = await agent.run("two", model_settings=ClaudeCodeModelSettings(claude_code_session="new"))
        assert source_of(one_off) == "fresh"
        assert source_of(await agent.run("and?", message_history=first.all_messages())) == "live"
        assert not [request for request in cli.controls if request["subtype"] == "rewind_conversation"]
    finally:
        await model.aclose()


async def test_a_cli_that_resumed_its_conversation_is_not_rewound(cli: ScriptedCLI) -> None:
    first_model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    first = await Agent(first_model, instructions="Be brief.").run("one")
    await first_model.aclose()
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    try:
        resumed = await agent.run("and?", message_history=first.all_messages())
        assert source_of(resumed) != "live"  # a new CLI took up the conversation it did not open

        assert source_of(await agent.run("two")) == "fresh"
        assert source_of(await agent.run("again?", message_history=resumed.all_messages())) == "live"
    finally:
        await model.aclose()


async def test_another_agent_is_not_served_by_a_kept_cli_of_a_different_agent(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    try:
        first = await Agent(model, instructions="Be brief.").run("one")
        assert source_of(await Agent(model, instructions="Be long.").run("two")) == "fresh"
        assert source_of(
            await Agent(model, instructions="Be brief.").run("?", message_history=first.all_messages())
        ) == ("live")
    finally:
        await model.aclose()


def test_the_ledger_remembers_a_bounded_number_of_cut_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_module, "_CUT_ENTRIES_REMEMBERED", 3)
    ledger = SessionLedger()
    ledger.cut("s", ["a", "b"])
    ledger.cut("s", ["c", "d"])
    assert not ledger.was_cut("s", "a")  # the oldest is forgotten (a transcript read now shows the cut itself)
    assert all(ledger.was_cut("s", entry) for entry in "bcd")


async def test_a_kept_cli_is_rewound_rather_than_wait_for_a_spare_and_the_spare_is_given_up(cli: ScriptedCLI) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1)
    model._resources.pool.spare_delay = 600.0  # the first conversation's spare waits for its delay all the test
    agent = Agent(model, instructions="Be brief.")
    try:
        await agent.run("one")
        assert model._resources.pool.spares() == 1

        second = await agent.run("two")

        assert source_of(second) == "rewound"
        assert len(cli.opened) == 1  # the spare was not made to start for it
        assert model._resources.pool.spares() == 0  # nor will it start: the kept CLI serves such conversations
        assert source_of(await agent.run("three")) == "rewound"
        assert model._resources.pool.spares() == 0  # a rewound conversation asks for no spare
        assert len(cli.opened) == 1
    finally:
        await model.aclose()
    assert cli.live == 0


async def test_a_kept_cli_with_built_in_tools_is_never_rewound(cli: ScriptedCLI) -> None:
    settings = ClaudeCodeModelSettings(claude_code_builtin_tools=["Read"])
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0, settings=settings)
    agent = Agent(model, instructions="Be brief.")
    try:
        first = await agent.run("one")
        assert source_of(await agent.run("two")) == "fresh"  # what it read or left running stays with it
        assert source_of(await agent.run("and?", message_history=first.all_messages())) == "live"
        assert not [request for request in cli.controls if request["subtype"] == "rewind_conversation"]
    finally:
        await model.aclose()


async def test_a_run_cancelled_during_the_rewind_stops_that_cli(
    cli: ScriptedCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=0)
    agent = Agent(model, instructions="Be brief.")
    rewinding = asyncio.Event()

    async def hangs(self: CLISession) -> None:
        rewinding.set()
        await asyncio.Event().wait()

    try:
        first = await agent.run("one")
        monkeypatch.setattr(CLISession, "rewind", hangs)
        run = asyncio.ensure_future(agent.run("two"))
        await rewinding.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert await wait_for(lambda: cli.live == 0)  # the CLI it was rewinding is stopped: its state is unknown
        monkeypatch.undo()
        again = await agent.run("and?", message_history=first.all_messages())
        assert source_of(again) == "replay"  # its conversation was marked cut before the rewind was sent
    finally:
        await model.aclose()
    assert cli.live == 0
