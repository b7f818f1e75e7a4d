"""The API error classes built from what the CLI reports, without the CLI (classification and pickling)."""

from __future__ import annotations

import pickle

import pytest
from pydantic_ai.exceptions import (
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
)

from claudecode_model.exceptions import ClaudeCodeQuotaExceededError, api_error_for_status


@pytest.mark.parametrize(
    ("status", "error_type", "error_code", "message", "category", "reported_status"),
    [
        (404, "not_found_error", None, "model: x", ModelNotFoundError, 404),
        (429, "rate_limit_error", None, "slow down", ModelRateLimitError, 429),
        (429, "rate_limit_error", "credits_required", "out of credits", ModelQuotaExceededError, 429),
        (400, "invalid_request_error", None, "Your credit balance is too low", ModelQuotaExceededError, 400),
        (402, None, None, "billing", ModelQuotaExceededError, 402),
        (400, None, None, "bad request", ModelRequestRejectedError, 400),
        (500, None, None, "boom", ModelServerError, 500),
    ],
)
def test_the_class_follows_the_error_type_and_code_then_the_status(
    status: int, error_type: str | None, error_code: str | None, message: str, category: type, reported_status: int
):
    error = api_error_for_status(
        status, "m", message, cli_message=message, error_type=error_type, error_code=error_code
    )
    assert isinstance(error, category)
    assert error.status_code == reported_status
    assert error.provider_error_type == error_type
    assert error.details == ({"error_code": error_code} if error_code else None)


def test_an_error_inside_a_stream_gets_the_status_of_its_type():
    error = api_error_for_status(500, "m", "API Error: 500", error_type="overloaded_error", in_stream=True)
    assert isinstance(error, ModelOverloadedError)
    assert (error.status_code, error.in_stream) == (529, True)


def test_an_api_error_survives_pickling_with_what_the_cli_said():
    # A durable engine (DBOS) records an error by pickling it and raises it again on replay.
    error = api_error_for_status(
        429,
        "m",
        "out of credits",
        cli_message="out of credits",
        result={"subtype": "success"},
        error_code="credits_required",
    )
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, ClaudeCodeQuotaExceededError)
    assert (again.details, again.cli_message, again.result) == (
        {"error_code": "credits_required"},
        "out of credits",
        {"subtype": "success"},
    )
