"""The request timeouts stop a turn mid-answer or before its first event, and leave the model usable, on the
in-memory CLI (``test_stream_cancel_cli.py`` keeps the cancellations, and a timeout while the CLI starts, with real
processes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRequestTimeout

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import CLIStep, ScriptedCLI, Stall

LONG_TEXT = "This answer is long enough to be cancelled well before its last word reaches the caller."


def started_answer() -> list[CLIStep]:
    """An API response whose stream stops after its first words (and never goes on)."""
    message = {"id": "msg_held", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {}}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "This answer"}},
    ]
    return [*({"type": "stream_event", "event": event} for event in events), Stall()]


async def assert_stopped_and_still_works(cli: ScriptedCLI, model: ClaudeCodeModel) -> None:
    """The CLI of the timed-out turn is gone, and the model serves the next run."""
    assert cli.live == 0
    result = await Agent(model).run("once more, in full")
    assert result.output == LONG_TEXT


async def test_request_timeout_stops_the_cli_mid_answer():
    cli = ScriptedCLI([started_answer(), LONG_TEXT])
    model = ClaudeCodeModel(cli_transports=cli, settings={"claude_code_timeout": 60})
    try:
        with pytest.raises(ModelRequestTimeout) as raised:
            await Agent(model).run("tell me everything", model_settings={"request_timeout": 1})
        assert raised.value.setting == "request_timeout"
        await assert_stopped_and_still_works(cli, model)
    finally:
        await model.aclose()


async def test_first_event_timeout_stops_a_cli_that_has_streamed_nothing():
    cli = ScriptedCLI([[Stall()], LONG_TEXT])
    model = ClaudeCodeModel(cli_transports=cli, settings={"claude_code_timeout": 60})
    agent = Agent(model)

    async def stream_it() -> str:
        async with agent.run_stream("hello?", model_settings={"first_event_timeout": 1}) as stream:
            return await stream.get_output()

    try:
        with pytest.raises(ModelRequestTimeout) as raised:
            await asyncio.wait_for(stream_it(), timeout=30)
        assert raised.value.setting == "first_event_timeout"
        await assert_stopped_and_still_works(cli, model)
    finally:
        await model.aclose()
