"""The turn runner on the in-memory CLI: a turn's messages can be left and taken up again; its session is kept."""

from __future__ import annotations

from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock
from claude_agent_sdk.types import Message
from pydantic_ai.messages import ModelRequest, TextPart
from pydantic_ai.models import ModelRequestParameters

from claudecode_model._process.binary import find_cli
from claudecode_model._sessions.idle_budget import IdleBudget
from claudecode_model._sessions.pool import SessionPool
from claudecode_model._sessions.session import CLISession, ToolsWaiting
from claudecode_model._tools.request import ToolSetup
from claudecode_model._turns.runner import TurnRunner
from claudecode_model._turns.start import start_turn
from claudecode_model.testing import ScriptedCLI


async def test_messages_can_be_left_and_taken_up_again() -> None:
    cli = ScriptedCLI(["one two three"])
    pool: SessionPool[CLISession] = SessionPool(budget=IdleBudget(1), idle_timeout=60)
    runner = TurnRunner(None, "default", find_cli(), {}, ToolSetup(), pool, cli_transports=cli)
    turn = await start_turn(runner, [ModelRequest.user_text_prompt("hi")], None, ModelRequestParameters())
    try:
        first: list[Message | ToolsWaiting] = []
        async for message in turn.messages():
            first.append(message)
            break  # leave the turn mid-way
        assert not turn.completed
        rest: list[Message | ToolsWaiting] = []
        async for message in turn.messages():
            rest.append(message)
            assert not isinstance(message, ToolsWaiting)
            list(turn.translator.feed(message))
    finally:
        await turn.finish()
    try:
        assert turn.completed
        assert not turn.failed
        assert turn.raw_messages == first + rest
        assert isinstance(rest[-1], ResultMessage)
        texts = [b.text for m in rest if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]
        assert texts == ["one two three"]
        assert len(pool) == 1  # a cleanly finished turn leaves its session for the next one
        assert len(cli.received) == 1
        assert turn.translator.parts.get_parts() == [TextPart("one two three")]
    finally:
        await pool.close_all()
