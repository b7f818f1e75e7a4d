"""The API's errors raise the pydantic-ai error classes ``AnthropicModel`` raises for the same responses.

End to end through the real Claude Code CLI: the offline backend answers with the API's error responses (an HTTP
error, or an ``error`` event inside a stream that had started), and the run raises the matching class.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import (
    ClaudeCodeAPIError,
    ClaudeCodeModel,
    ClaudeCodeModelNotFoundError,
    ClaudeCodeQuotaExceededError,
)
from claudecode_model.testing import Failure, OfflineBackend

pytestmark = pytest.mark.cli

CREDITS = {"error_code": "credits_required"}


@pytest.mark.parametrize(
    ("failure", "category", "not_category", "status", "in_stream"),
    [
        pytest.param(
            Failure.http(404, "model: claude-opus-5-5", error_type="not_found_error"),
            ModelNotFoundError,
            None,
            404,
            False,
            id="404-model-not-found",
        ),
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
            Failure.http(400, "Your credit balance is too low to access the Anthropic API."),
            ModelQuotaExceededError,
            None,
            400,
            False,
            id="400-credit-balance",
        ),
        pytest.param(
            Failure.http(402, "billing", error_type="billing_error"),
            ModelQuotaExceededError,
            None,
            402,
            False,
            id="402-billing",
        ),
        pytest.param(Failure.http(529, "Overloaded"), ModelOverloadedError, None, 529, False, id="529-overloaded"),
        pytest.param(
            Failure.sse_error("rate_limit_error", "Rate limited"),
            ModelRateLimitError,
            None,
            429,
            True,
            id="stream-rate-limit",
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
    try:
        with pytest.raises(ClaudeCodeAPIError) as raised:
            await Agent(model).run("hello")
    finally:
        await model.aclose()

    error = raised.value
    assert isinstance(error, ModelHTTPError)
    assert isinstance(error, category)
    if not_category is not None:
        assert not isinstance(error, not_category)
    assert (error.status_code, error.in_stream) == (status, in_stream)
    assert error.provider_error_type == failure.error_type
    # A model made without a name lets the CLI choose: the error names the model the CLI said it used, as a response
    # would, not "default".
    assert (model.model_name, error.model_name) == ("default", claude_backend.model_name)


async def test_a_model_the_api_does_not_know_is_model_not_found(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(404, "model: claude-nonexistent", error_type="not_found_error"), count=3)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        with pytest.raises(ClaudeCodeModelNotFoundError):
            await Agent(model).run("hello")
    finally:
        await model.aclose()


async def test_exhausted_credits_keep_the_error_details_and_fallback_model_moves_on(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(429, "You are out of usage credits", details=CREDITS), count=3)

    def other_provider(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("answered by the fallback")])

    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        with pytest.raises(ClaudeCodeQuotaExceededError) as raised:
            await Agent(model).run("hello")
        error = raised.value
        assert error.details == CREDITS
        assert error.provider_error_code == "credits_required"
        assert isinstance(error, ModelAPIError)

        claude_backend.fail_next(Failure.http(429, "You are out of usage credits", details=CREDITS), count=3)
        fallback = FallbackModel(model, FunctionModel(other_provider), fallback_on=(ModelQuotaExceededError,))
        result = await Agent(fallback).run("hello")
    finally:
        await model.aclose()

    assert result.output == "answered by the fallback"


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
