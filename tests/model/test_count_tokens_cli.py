"""``count_tokens``: a request's input tokens estimated without an API request, so that
``UsageLimits(count_tokens_before_request=True)`` stops a run before Claude is asked.

The offline backend counts a request at one token per four characters of all it received, the rule the estimate
follows: the two agree closely when the estimate counts everything the CLI sends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.usage import RequestUsage

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def _agent(model: ClaudeCodeModel) -> Agent[None, str]:
    agent = Agent(model, instructions="Answer in one word. " * 20)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    return agent


async def test_a_usage_limit_stops_the_run_before_any_request(claude_backend: OfflineBackend, tmp_path: Path):
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, settings={"claude_code_cwd": str(tmp_path)})
    limits = UsageLimits(count_tokens_before_request=True, input_tokens_limit=200)
    try:
        with pytest.raises(UsageLimitExceeded, match="input_tokens_limit of 200"):
            await _agent(model).run("hello " * 200, usage_limits=limits)
    finally:
        await model.aclose()

    assert claude_backend.requests == []


async def test_the_count_is_close_to_what_the_request_carries(
    claude_backend: OfflineBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    claude_backend.set_brain("ok")
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, settings={"claude_code_cwd": str(tmp_path)})
    counted: list[int] = []
    count_tokens = model.count_tokens

    async def recording(*args: Any) -> RequestUsage:
        usage = await count_tokens(*args)
        counted.append(usage.input_tokens)
        return usage

    monkeypatch.setattr(model, "count_tokens", recording)
    limits = UsageLimits(count_tokens_before_request=True, input_tokens_limit=100_000)
    try:
        result = await _agent(model).run("hello " * 200, usage_limits=limits)
    finally:
        await model.aclose()

    sent = result.usage.input_tokens  # the backend's count of the request the CLI sent
    assert len(counted) == 1
    assert abs(counted[0] - sent) <= sent * 0.1, (counted, sent)
