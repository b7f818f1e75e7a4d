"""Idle sessions end on time while the program runs, on the in-memory CLI (the request timeout of a CLI that hangs
at start, and of a fresh program's first request, stay with real processes in ``test_lifetimes_cli.py``)."""

from __future__ import annotations

from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import ScriptedCLI
from tests._support.polling import wait_for


async def test_an_idle_session_ends_on_time_without_another_request() -> None:
    cli = ScriptedCLI(lambda message: "hello back")
    model = ClaudeCodeModel(cli_transports=cli, session_idle_timeout=1.0, spare_sessions=0)
    try:
        await Agent(model).run("hello")
        assert cli.live == 1  # kept for a follow-up turn

        assert await wait_for(lambda: cli.live == 0, within=15)
    finally:
        await model.aclose()
