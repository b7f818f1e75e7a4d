"""Failed turns are classified for what they are, from the messages the CLI sends (on the in-memory CLI; the real
CLI keeps a prompt too long with and without compaction, and the transport failures of fake CLIs, in
``test_failures_cli.py``)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelRateLimitError,
)

from claudecode_model import ClaudeCodeContextWindowExceededError, ClaudeCodeModel, ClaudeCodeRateLimitError
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.testing import CLIStep, ScriptedCLI
from tests._support.api_errors import assert_prompt_too_long, run_error
from tests._support.cli_script import api_error

EXPLAINED = (
    "Prompt is too long · the request is ~250000 tokens (limit 200000) but this conversation is only ~428 tokens — "
    "the rest is system prompt, tool definitions, and attachment content. A single-exchange conversation cannot be "
    "compacted; reduce attached files/tools or start with less context."
)
"""What the CLI says of a prompt too long when it could not compact it."""


def too_long(*, in_stream: bool, compaction: bool) -> list[CLIStep]:
    """A prompt too long as the CLI reports it: an HTTP 400, or (in a stream) its 500 with the error's type."""
    return api_error(
        500 if in_stream else 400,
        "invalid_request_error",
        EXPLAINED if compaction else "Prompt is too long",
        error="invalid_request",
        in_stream=in_stream,
        terminal_reason="prompt_too_long",
    )


@pytest.mark.parametrize("in_stream", [False, True], ids=["http-400", "sse-error"])
@pytest.mark.parametrize("compaction", [False, True], ids=["default", "compaction"])
async def test_a_prompt_too_long_is_a_context_window_error(in_stream: bool, compaction: bool):
    settings: ClaudeCodeModelSettings = {"claude_code_compaction": compaction}
    cli = ScriptedCLI([too_long(in_stream=in_stream, compaction=compaction)])
    model = ClaudeCodeModel(cli_transports=cli, keep_sessions=0, settings=settings)

    error = await run_error(model, ClaudeCodeContextWindowExceededError)
    assert_prompt_too_long(error, compaction=compaction)


async def test_the_five_hour_limit_is_a_rate_limit_error_with_its_reset_time():
    resets = int(time.time()) + 3600
    window = {"utilization": 1, "resetsAt": resets, "status": "rejected"}
    info = {
        "status": "rejected",
        "resetsAt": resets,
        "rateLimitType": "five_hour",
        "isUsingOverage": False,
        "unifiedWindows": {"five_hour": window},
    }
    text = "You've hit your 5-hour limit · resets 2:02am (UTC)"
    turn = [
        {"type": "rate_limit_event", "rate_limit_info": info},
        *api_error(429, "rate_limit_error", text, error="rate_limit"),
    ]
    model = ClaudeCodeModel(cli_transports=ScriptedCLI([turn]), keep_sessions=0)

    with pytest.raises(ClaudeCodeRateLimitError) as raised:
        await Agent(model).run("hello")

    error = raised.value
    assert isinstance(error, ModelRateLimitError)
    assert error.status_code == 429
    assert "5-hour limit" in str(error)
    assert error.resets_at == datetime.fromtimestamp(resets, UTC)
    assert error.retry_after is not None
    assert 3000 < error.retry_after <= 3600
