"""The fault suite (issue 39): through the real CLI, the offline backend stalls or fails at chosen points, and each
run ends with the documented error, what it spent, and whether a retry is safe (``reached_model``).

The inactivity bound is short here (a few seconds) so that a stall ends quickly; the bound's default is checked in
``tests/model/test_inactivity_unit.py``. Durations are only checked against generous bounds that prove "it ended".
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError, ModelTimeoutError
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.test import TestModel

from claudecode_model import (
    ClaudeCodeError,
    ClaudeCodeInactivityError,
    ClaudeCodeModel,
    ClaudeCodeModelSettings,
    ClaudeCodeOverloadedError,
    ClaudeCodeRateLimitError,
    CLINotFoundError,
    CLIProcessError,
)
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.limits import limit_headers, subscription_env
from tests._support.responses import details

pytestmark = pytest.mark.cli

BOUND = 3.0
"""The inactivity bound of these tests (seconds)."""
ENDED_WITHIN = 60.0
"""A generous bound on how long a run that stalls forever may take with ``BOUND`` (CLI start included)."""
E = TypeVar("E", bound=BaseException)

ANSWER = "A long enough answer that is held by the backend after its first few words reach the CLI."


def bounded(backend: OfflineBackend, **kwargs: object) -> ClaudeCodeModel:
    settings = {"claude_code_inactivity_timeout": BOUND}
    return ClaudeCodeModel(env=backend.cli_env(), keep_sessions=0, spare_sessions=0, settings=settings, **kwargs)  # type: ignore[arg-type]


async def failed_run(model: ClaudeCodeModel, expected: type[E]) -> E:
    """The ``expected`` error of a run on ``model`` (checked to end within ``ENDED_WITHIN``, a stall included)."""
    started = time.monotonic()
    with pytest.raises(expected) as raised:
        await Agent(model).run("hello")
    assert time.monotonic() - started < ENDED_WITHIN
    return raised.value


async def test_a_stall_mid_stream_ends_within_the_bound_with_what_it_spent(claude_backend: OfflineBackend):
    claude_backend.set_brain(ANSWER)
    claude_backend.text_chunk_size = 4
    claude_backend.hold_next_stream(after_deltas=2)  # never released: the backend stalls forever mid-stream
    model = bounded(claude_backend)

    error = await failed_run(model, ClaudeCodeInactivityError)
    assert isinstance(error, ModelTimeoutError)
    assert isinstance(error, ModelAPIError)
    assert isinstance(error, ClaudeCodeError)
    assert error.timeout == BOUND
    assert f"claude_code_inactivity_timeout={BOUND:g}" in str(error)
    assert error.reached_model is True  # the answer had started: tokens were spent
    assert error.usage is not None
    assert error.usage.input_tokens > 0
    assert error.api_requests == 1
    assert len(claude_backend.requests) == 1
    await model.aclose()


async def test_a_stall_before_the_first_token_ends_within_the_bound_and_spent_nothing(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.stall())  # accepts the request, never answers
    model = bounded(claude_backend)

    error = await failed_run(model, ClaudeCodeInactivityError)
    assert error.reached_model is False  # safe to send again
    assert error.cost_usd == 0.0
    assert error.api_requests == 1  # the one that never answered
    assert len(claude_backend.requests) == 1
    await model.aclose()


async def test_a_stall_moves_a_fallback_model_on(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.stall())
    model = bounded(claude_backend)

    result = await Agent(FallbackModel(model, TestModel(custom_output_text="from the fallback"))).run("hello")

    assert result.output == "from the fallback"
    await model.aclose()


@pytest.mark.parametrize("execution", ["agent", "cli"])
async def test_a_tool_call_longer_than_the_bound_is_not_cut(claude_backend: OfflineBackend, execution: str):
    model = bounded(claude_backend, tool_execution=execution)
    agent = Agent(model)
    calls: list[str] = []

    @agent.tool_plain
    async def slow_lookup(key: str) -> str:
        """Look a key up (slowly)."""
        calls.append(key)
        await asyncio.sleep(BOUND * 2.5)
        return f"value of {key}"

    result = await agent.run("look it up")

    assert len(calls) == 1
    assert "value of" in str(claude_backend.requests[-1].messages[-1])  # the result reached Claude
    assert result.output
    await model.aclose()


async def test_an_overload_before_any_token_is_safe_to_retry(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(529, "Overloaded", error_type="overloaded_error"), count=3)
    model = bounded(claude_backend)

    error = await failed_run(model, ClaudeCodeOverloadedError)
    assert error.reached_model is False
    assert error.cost_usd == 0.0
    assert error.api_requests == len(claude_backend.requests) >= 1
    await model.aclose()


async def test_an_overload_mid_answer_says_tokens_were_spent(claude_backend: OfflineBackend):
    cut = Failure.cut(ANSWER, after_deltas=2, ending="sse_error")
    claude_backend.fail_next(cut)
    claude_backend.fail_next(Failure.http(529, "Overloaded", error_type="overloaded_error"), count=3)
    model = bounded(claude_backend)

    error = await failed_run(model, ClaudeCodeOverloadedError)
    assert error.reached_model is True
    assert error.usage is not None
    assert error.usage.input_tokens > 0
    assert error.api_requests is not None
    assert error.api_requests >= 2
    await model.aclose()


async def test_a_bad_cli_path_never_reached_the_model(tmp_path: Path):
    model = ClaudeCodeModel(cli_path=tmp_path / "no-such-claude")

    error = await failed_run(model, CLINotFoundError)

    assert error.reached_model is False
    assert error.api_requests == 0
    await model.aclose()


async def test_a_cli_that_exits_at_once_never_reached_the_model(tmp_path: Path):
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\nexit 1\n")
    cli.chmod(0o755)
    model = ClaudeCodeModel(cli_path=cli, keep_sessions=0, spare_sessions=0)

    error = await failed_run(model, CLIProcessError)

    assert error.reached_model is False
    assert error.cost_usd == 0.0
    await model.aclose()


async def test_the_clis_own_retries_are_visible(claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture):
    claude_backend.set_brain("Answered on the second attempt.")
    claude_backend.fail_next(Failure.http(529, "Overloaded", error_type="overloaded_error"))
    model = bounded(claude_backend)

    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        result = await Agent(model).run("hello", model_settings={"max_retries": 1})

    assert result.output == "Answered on the second attempt."
    assert len(claude_backend.requests) == 2
    [retry] = details(result.all_messages()[-1])["api_retries"]
    assert retry["attempt"] == 1
    assert retry["error_status"] == 529
    assert "Claude Code retries an API request" in caplog.text
    await model.aclose()


async def test_the_clis_attempt_timeout_ends_a_stall_before_the_bound_and_it_retries(claude_backend: OfflineBackend):
    """With a bound of 15 s the CLI's first-byte window is 12.5 s: the CLI gives up on the stalled request and asks
    again (visibly) before the bound fires, and the second request is answered."""
    claude_backend.set_brain("Answered after the CLI's own retry.")
    claude_backend.fail_next(Failure.stall())  # the first request only
    model = ClaudeCodeModel(
        env=claude_backend.cli_env(), keep_sessions=0, spare_sessions=0, settings={"claude_code_inactivity_timeout": 15}
    )

    result = await Agent(model).run("hello", model_settings={"max_retries": 1})

    assert result.output == "Answered after the CLI's own retry."
    assert len(claude_backend.requests) == 2
    assert details(result.all_messages()[-1])["api_retries"]
    await model.aclose()


def limit_reached(resets: int, claim: str = "five_hour") -> Failure:
    return Failure.http(429, "rate limited", error_type="rate_limit_error", headers=limit_headers(resets, claim))


@pytest.mark.parametrize("claim", ["five_hour", "seven_day"])
async def test_a_usage_limit_says_when_it_resets_and_spent_nothing(claude_backend: OfflineBackend, claim: str):
    resets = int(time.time()) + (3600 if claim == "five_hour" else 4 * 86400)
    claude_backend.fail_next(limit_reached(resets, claim))
    model = ClaudeCodeModel(env=subscription_env(claude_backend), keep_sessions=0, spare_sessions=0)

    error = await failed_run(model, ClaudeCodeRateLimitError)
    assert error.resets_at == datetime.fromtimestamp(resets, UTC)
    assert error.retry_after is not None
    assert resets - time.time() - 60 < error.retry_after <= resets - time.time() + 1
    assert error.reached_model is False
    assert len(claude_backend.requests) == 1
    await model.aclose()


async def test_a_plain_run_that_opts_in_waits_out_the_reset(
    claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture
):
    claude_backend.set_brain("Answered after the reset.")
    resets = int(time.time()) + 5
    claude_backend.fail_next(limit_reached(resets))
    model = ClaudeCodeModel(env=subscription_env(claude_backend), keep_sessions=0, spare_sessions=0)

    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        result = await Agent(model).run(
            "hello", model_settings=ClaudeCodeModelSettings({"claude_code_limit_reset_wait": 60})
        )

    assert result.output == "Answered after the reset."
    assert time.time() >= resets  # asked again only once the limit had reset
    assert len(claude_backend.requests) == 2
    assert "waiting until " + datetime.fromtimestamp(resets, UTC).isoformat(timespec="seconds") in caplog.text
    await model.aclose()


async def test_a_reset_beyond_the_wait_is_raised_at_once(claude_backend: OfflineBackend):
    claude_backend.fail_next(limit_reached(int(time.time()) + 3600))
    model = ClaudeCodeModel(env=subscription_env(claude_backend), keep_sessions=0, spare_sessions=0)
    started = time.monotonic()

    with pytest.raises(ClaudeCodeRateLimitError):
        await Agent(model).run("hello", model_settings=ClaudeCodeModelSettings({"claude_code_limit_reset_wait": 600}))

    assert time.monotonic() - started < ENDED_WITHIN
    assert len(claude_backend.requests) == 1
    await model.aclose()
