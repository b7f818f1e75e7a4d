"""The API's errors raise the pydantic-ai error classes ``AnthropicModel`` raises for the same responses.

End to end through the real Claude Code CLI: the offline backend answers with the API's error responses (an HTTP
error, or an ``error`` event inside a stream that had started), and the run raises the matching class. The other
statuses, and what the model does with the error, are tested on the in-memory CLI with the messages the CLI sends
(``test_error_classes.py``).
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
)

from claudecode_model import (
    ClaudeCodeAPIError,
    ClaudeCodeModel,
)
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.api_errors import assert_http_class, run_error

pytestmark = pytest.mark.cli

CREDITS = {"error_code": "credits_required"}


@pytest.mark.parametrize(
    ("failure", "category", "not_category", "status", "in_stream"),
    [
        pytest.param(
            Failure.http(429, "Rate limited", headers={"retry-after": "17"}),
            ModelRateLimitError,
            ModelQuotaExceededError,
            429,
            False,
            id="429-rate-limit",
        ),
        pytest.param(
            Failure.http(429, "You are out of usage credits", details=CREDITS),
            ModelQuotaExceededError,
            ModelRateLimitError,
            429,
            False,
            id="429-credits-required",
        ),
        pytest.param(
            Failure.sse_error("overloaded_error", "Overloaded"),
            ModelOverloadedError,
            None,
            529,
            True,
            id="stream-overloaded",
        ),
    ],
)
async def test_an_api_error_raises_the_class_anthropic_model_raises(
    claude_backend: OfflineBackend,
    failure: Failure,
    category: type[Exception],
    not_category: type[Exception] | None,
    status: int,
    in_stream: bool,
):
    claude_backend.fail_next(failure, count=3)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    error = await run_error(model, ClaudeCodeAPIError)
    assert_http_class(error, category, not_category, status, in_stream, failure.error_type)
    # A model made without a name lets the CLI choose: the error names the model the CLI said it used, as a response
    # would, not "default".
    assert (model.model_name, error.model_name) == ("default", claude_backend.model_name)


async def test_max_retries_sets_how_often_the_cli_retries_before_it_reports_the_status(
    claude_backend: OfflineBackend,
):
    # The offline environment makes the CLI give up at once; pydantic-ai's max_retries=1 lets it retry once.
    claude_backend.set_brain("answered after a retry")
    claude_backend.fail_next(Failure.http(529, "Overloaded"))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        result = await Agent(model).run("hello", model_settings={"max_retries": 1})
        assert result.output == "answered after a retry"
        assert len(claude_backend.requests) == 2

        claude_backend.fail_next(Failure.http(529, "Overloaded"))
        with pytest.raises(ModelOverloadedError):
            await Agent(model).run("hello", model_settings={"max_retries": 0})
        assert len(claude_backend.requests) == 3
    finally:
        await model.aclose()
