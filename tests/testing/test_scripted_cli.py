"""The in-memory CLI (``ScriptedCLI``) under a real ``CLISession``: what it plays, how it ends."""

from __future__ import annotations

import asyncio

import pytest
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, StreamEvent, SystemMessage
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, ToolCallPart

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions.session import CLISession
from claudecode_model.exceptions import CLIInterruptedError
from claudecode_model.testing import Crash, ScriptedCLI, Stall


def user(text: str) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


async def started(cli: ScriptedCLI) -> CLISession:
    session = CLISession(ClaudeAgentOptions(), signature="s", transports=cli)
    await session.start()
    return session


async def test_a_turn_is_played_as_the_cli_reports_it() -> None:
    cli = ScriptedCLI(["one", ["two", "three"]])
    session = await started(cli)
    try:
        first = [m async for m in session.run_turn(user("a"))]
        second = [m async for m in session.run_turn(user("b"))]
    finally:
        await session.close()
    assert isinstance(first[0], SystemMessage)
    assert any(isinstance(m, StreamEvent) for m in first)
    texts = [b.text for m in second if isinstance(m, AssistantMessage) for b in m.content if hasattr(b, "text")]
    assert texts == ["two", "three"]
    assert isinstance(first[-1], ResultMessage)
    assert isinstance(second[-1], ResultMessage)
    assert (first[-1].result, second[-1].result) == ("one", "three")
    assert second[-1].total_cost_usd == pytest.approx(3 * cli.cost_per_reply)  # cumulative, as the CLI reports it
    assert first[-1].session_id == second[-1].session_id == session.session_id
    assert [m["message"]["content"] for m in cli.received] == ["a", "b"]
    assert cli.live == 0
    assert session.closed


async def test_a_raw_result_ends_the_turn_as_it_is() -> None:
    raw = {"type": "result", "subtype": "error_max_turns", "is_error": True, "duration_ms": 1, "duration_api_ms": 1}
    cli = ScriptedCLI([[{**raw, "num_turns": 3}]])
    session = await started(cli)
    try:
        messages = [m async for m in session.run_turn(user("a"))]
    finally:
        await session.close()
    assert isinstance(messages[-1], ResultMessage)
    assert (messages[-1].subtype, messages[-1].num_turns) == ("error_max_turns", 3)


async def test_a_crash_fails_the_turn_and_ends_the_session() -> None:
    cli = ScriptedCLI([["partial", Crash(exit_code=3)]])
    session = await started(cli)
    messages: list[object] = []
    with pytest.raises(Exception, match="exit code 3"):
        async for message in session.run_turn(user("a")):
            messages.append(message)
    assert any(isinstance(m, AssistantMessage) for m in messages)
    await session.close()
    assert session.closed
    assert cli.live == 0


async def test_an_interrupt_ends_a_stalled_turn_and_keeps_the_cli() -> None:
    cli = ScriptedCLI([[Stall()], "after"])
    session = await started(cli)
    try:
        turn = session.run_turn(user("a"))
        assert isinstance(await anext(turn), SystemMessage)
        session.interrupt_soon()
        rest = [m async for m in turn]
        assert isinstance(rest[-1], ResultMessage)
        assert rest[-1].subtype == "error_during_execution"
        after = [m async for m in session.run_turn(user("b"))]
        assert isinstance(after[-1], ResultMessage)
        assert after[-1].result == "after"
    finally:
        await session.close()


async def test_a_session_stopped_mid_turn_ends_it_at_once() -> None:
    cli = ScriptedCLI([[Stall()]])
    session = await started(cli)
    turn = session.run_turn(user("a"))
    await anext(turn)
    async with asyncio.timeout(3):
        await session.abort()
    with pytest.raises(CLIInterruptedError):  # the consumer learns the turn is over, as with a killed CLI
        await anext(turn)
    assert cli.live == 0


async def test_the_agents_tools_are_called_through_their_in_process_server() -> None:
    call = ToolCallPart("mcp__pydantic_tools__double", {"n": 21}, tool_call_id="toolu_1")
    cli = ScriptedCLI([[ModelResponse(parts=[call]), lambda results: f"done: {results}"]])
    model = ClaudeCodeModel(cli_transports=cli)
    agent = Agent(model)
    seen: list[int] = []

    @agent.tool_plain
    def double(n: int) -> int:
        seen.append(n)
        return 2 * n

    try:
        result = await agent.run("go")
    finally:
        await model.aclose()
    assert result.output == "done: ['42']"  # a step that is a function gets the turn's tool results
    assert seen == [21]
    assert cli.live == 0
