"""The library logs its decisions: the CLI's start, how a conversation is taken up, and each turn's cost."""

from __future__ import annotations

import logging
import re

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


async def test_start_continue_resume_and_turn_lines(claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture):
    claude_backend.set_brain("ok")
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)  # counts the conversation's own CLIs
    agent = Agent(model)
    with caplog.at_level(logging.DEBUG, logger="claudecode_model"):
        first = await agent.run("one")
        second = await agent.run("two", message_history=first.all_messages())  # the live process goes on
        await model.aclose()
        await agent.run("three", message_history=second.all_messages())  # no live process: resumed
        await agent.run("four", message_history=first.all_messages())  # the session went on past it: forked
        await model.aclose()

    lines = [record.getMessage() for record in caplog.records if record.name.startswith("claudecode_model.")]
    assert sum(bool(re.match(r"Claude Code CLI started: pid \d+, ready in \d+\.\d\d s", line)) for line in lines) == 3
    assert any(line.startswith("continuing session ") for line in lines)
    assert any(line.startswith("resuming session ") for line in lines)
    assert any(line.startswith("forking session ") for line in lines)
    turns = [line for line in lines if line.startswith("Claude Code turn done in ")]
    assert len(turns) == 4
    assert re.search(r"\d+ input and \d+ output tokens, cost \$\d+\.\d{6}, session [0-9a-f-]{36}", turns[0])
