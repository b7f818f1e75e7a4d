"""Time limits: the request timeout covers the CLI's start (an idle session's end is tested on the in-memory CLI,
``test_lifetimes.py``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import cast

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, CLITimeoutError
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.polling import wait_for

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_NOISE = 1.0
"""How much later than a plain timer of the same length, started at the same moment, a timeout may surface in these
tests: the error comes after the CLI is stopped (0.0-0.05 s on an idle machine). Measured against that timer, not the
wall clock, so that a loaded machine, which makes both late, does not fail the test. The old faults this guards
against were 1.5-2.5 s late (the first request's imports not counted, a given-up start waited for)."""


async def plain_timer(seconds: float) -> float:
    """When a plain timer of ``seconds`` on this event loop fired (``time.monotonic()``)."""
    await asyncio.sleep(seconds)
    return time.monotonic()


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

    reference = asyncio.get_running_loop().create_task(plain_timer(3))
    with pytest.raises(CLITimeoutError) as raised:
        await Agent(model).run("hello", model_settings=cast(ClaudeCodeModelSettings, {setting: 3}))  # one of two keys
    gave_up = time.monotonic()
    timer_fired = await reference

    assert raised.value.timeout == 3
    late = gave_up - timer_fired
    assert late < TIMEOUT_NOISE, f"gave up {late:.1f} s after a 3 s timer"  # the SDK alone waits 60 s for the CLI
    assert await wait_for(lambda: cli_processes() == [], within=10)


def test_the_timeout_of_a_fresh_programs_first_request_fires_on_time(claude_backend: OfflineBackend, tmp_path: Path):
    """The first request of a program imports the SDK first (seconds on a busy machine): the timeout counts it,
    whether it then fires while the CLI starts or while the API request stalls."""
    claude_backend.fail_next(Failure.stall())  # the API accepts the request and sends nothing
    program = tmp_path / "program.py"
    program.write_text(
        textwrap.dedent(
            """
            import threading, time
            started = time.monotonic()
            from pydantic_ai import Agent
            from claudecode_model import ClaudeCodeModel, CLITimeoutError

            run_started = time.monotonic()
            timer_fired = []
            reference = threading.Timer(3, lambda: timer_fired.append(time.monotonic() - run_started))
            reference.start()
            try:
                Agent(ClaudeCodeModel()).run_sync("hello", model_settings={"claude_code_timeout": 3})
            except CLITimeoutError:
                took = time.monotonic() - run_started
                reference.join()
                print(f"{took:.2f} {timer_fired[0]:.2f}")
            """
        )
    )
    completed = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env={**os.environ, **claude_backend.cli_env(), "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    took, timer_fired = map(float, completed.stdout.split())
    assert took >= 3
    assert took - timer_fired < TIMEOUT_NOISE, (
        f"the 3 s timeout fired after {took:.2f} s, a 3 s timer {timer_fired:.2f} s"
    )
