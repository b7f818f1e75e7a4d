"""Time limits: the request timeout covers the CLI's start, and idle sessions end on time while the program runs."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, CLITimeoutError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def cli_processes() -> list[int]:
    """Live Claude Code CLI processes among this process's children."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if parent == me and state != "Z" and b"--output-format" in command:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("setting", ["timeout", "claude_code_timeout"])
async def test_the_timeout_covers_a_cli_that_hangs_at_start(tmp_path: Path, setting: str):
    hanging = tmp_path / "claude"
    hanging.write_text("#!/bin/sh\nexec sleep 120\n")  # never answers the SDK's initialize request
    hanging.chmod(0o755)
    model = ClaudeCodeModel(cli_path=hanging, keep_sessions=0)

    started = time.monotonic()
    with pytest.raises(CLITimeoutError) as raised:
        await Agent(model).run("hello", model_settings={setting: 3})  # type: ignore[misc]
    took = time.monotonic() - started

    assert raised.value.timeout == 3
    assert took < 20, f"gave up after {took:.1f} s"  # the SDK alone would wait 60 s for the CLI to start
    assert cli_processes() == []


async def test_an_idle_session_ends_on_time_without_another_request(claude_backend: OfflineBackend):
    model = ClaudeCodeModel(env=claude_backend.cli_env(), session_idle_timeout=1.0, spare_sessions=0)
    try:
        await Agent(model).run("hello")
        assert len(cli_processes()) == 1  # kept for a follow-up turn

        deadline = time.monotonic() + 15
        while cli_processes() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

        assert cli_processes() == []
    finally:
        await model.aclose()
