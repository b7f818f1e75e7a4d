"""The API's errors, as the CLI reports them, raise the pydantic-ai error classes ``AnthropicModel`` raises for the
same responses (on the in-memory CLI: ``test_error_classes_cli.py`` keeps one HTTP error and one error inside a
stream through the real CLI)."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAPIError,
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
from claudecode_model.testing import CLIStep, ScriptedCLI
from tests._support.api_errors import assert_http_class, run_error
from tests._support.cli_script import api_error

CREDITS = {"error_code": "credits_required"}
OUT_OF_CREDITS = api_error(
    429,
    "rate_limit_error",
    "API Error: Request rejected (429) · You are out of usage credits",
    error="rate_limit",
    code="credits_required",
)
NOT_FOUND = api_error(
    404,
    "not_found_error",
    "There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it.",
    error="model_not_found",
)
RATE_LIMITED = api_error(
    429, "rate_limit_error", "API Error: Request rejected (429) · Rate limited", error="rate_limit"
)
LOW_BALANCE = api_error(400, "invalid_request_error", "Credit balance is too low", error="billing_error")
BILLING = api_error(402, "billing_error", "API Error: 402 billing", error="unknown")
OVERLOADED = api_error(529, "overloaded_error", "API Error: 529 Overloaded.", error="server_error")
STREAM_RATE_LIMITED = api_error(
    500, "rate_limit_error", "API Error: 500 Rate limited.", error="server_error", in_stream=True
)
STREAM_OVERLOADED = api_error(
    529, "overloaded_error", "API Error: 529 Overloaded.", error="server_error", in_stream=True
)


@pytest.mark.parametrize(
    ("turn", "category", "not_category", "status", "in_stream", "error_type"),
    [
        pytest.param(NOT_FOUND, ModelNotFoundError, None, 404, False, "not_found_error", id="404-model-not-found"),
        pytest.param(
            RATE_LIMITED,
            ModelRateLimitError,
            ModelQuotaExceededError,
            429,
            False,
            "rate_limit_error",
            id="429-rate-limit",
        ),
        pytest.param(
            OUT_OF_CREDITS,
            ModelQuotaExceededError,
            ModelRateLimitError,
            429,
            False,
            "rate_limit_error",
            id="429-credits-required",
        ),
        pytest.param(
            LOW_BALANCE, ModelQuotaExceededError, None, 400, False, "invalid_request_error", id="400-credit-balance"
        ),
        pytest.param(BILLING, ModelQuotaExceededError, None, 402, False, "billing_error", id="402-billing"),
        pytest.param(OVERLOADED, ModelOverloadedError, None, 529, False, "overloaded_error", id="529-overloaded"),
        pytest.param(
            STREAM_RATE_LIMITED, ModelRateLimitError, None, 429, True, "rate_limit_error", id="stream-rate-limit"
        ),
        pytest.param(
            STREAM_OVERLOADED, ModelOverloadedError, None, 529, True, "overloaded_error", id="stream-overloaded"
        ),
    ],
)
async def test_an_api_error_raises_the_class_anthropic_model_raises(
    turn: list[CLIStep],
    category: type[Exception],
    not_category: type[Exception] | None,
    status: int,
    in_stream: bool,
    error_type: str,
):
    model = ClaudeCodeModel(cli_transports=ScriptedCLI([turn]), spare_sessions=0)
    error = await run_error(model, ClaudeCodeAPIError)
    assert_http_class(error, category, not_category, status, in_stream, error_type)


async def test_a_model_the_api_does_not_know_is_model_not_found():
    model = ClaudeCodeModel(cli_transports=ScriptedCLI([NOT_FOUND]), spare_sessions=0)
    try:
        with pytest.raises(ClaudeCodeModelNotFoundError):
            await Agent(model).run("hello")
    finally:
        await model.aclose()


async def test_exhausted_credits_keep_the_error_details_and_fallback_model_moves_on():
    def other_provider(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("answered by the fallback")])

    model = ClaudeCodeModel(cli_transports=ScriptedCLI([OUT_OF_CREDITS, OUT_OF_CREDITS]), spare_sessions=0)
    try:
        with pytest.raises(ClaudeCodeQuotaExceededError) as raised:
            await Agent(model).run("hello")
        error = raised.value
        assert error.details == CREDITS
        assert error.provider_error_code == "credits_required"
        assert isinstance(error, ModelAPIError)

        fallback = FallbackModel(model, FunctionModel(other_provider), fallback_on=(ModelQuotaExceededError,))
        result = await Agent(fallback).run("hello")
    finally:
        await model.aclose()

    assert result.output == "answered by the fallback"
