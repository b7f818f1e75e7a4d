"""The contradictory result (``is_error: true`` with ``subtype: success``, no API error): recovered when it holds an
answer, else a retryable overload."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelOverloadedError

from claudecode_model._stream.errors import result_error
from claudecode_model._stream.translator import TurnOutcome
from claudecode_model.exceptions import ClaudeCodeOverloadedError
from tests._support.sdk_messages import result_message


def contradictory(**fields: Any) -> TurnOutcome:
    return TurnOutcome(result=result_message(is_error=True, **fields))


def test_a_contradictory_result_with_an_answer_is_recovered(caplog: pytest.LogCaptureFixture):
    outcome = contradictory(result="Paris.", stop_reason="end_turn")

    with caplog.at_level(logging.WARNING):
        assert result_error(outcome, model_name="sonnet") is None

    assert outcome.recovered
    assert "holds an answer" in caplog.text


def test_a_contradictory_result_with_structured_output_is_recovered():
    outcome = contradictory(result="", structured_output={"city": "Paris"})

    assert result_error(outcome, model_name="sonnet") is None
    assert outcome.recovered


@pytest.mark.parametrize(
    "fields",
    [{"result": ""}, {"result": "partial", "stop_reason": None}, {"result": "x", "stop_reason": "tool_use"}],
    ids=["empty", "no-stop", "tool-use"],
)
def test_a_contradictory_result_without_an_answer_is_a_retryable_overload(fields: dict[str, Any]):
    outcome = contradictory(**fields)

    error = result_error(outcome, model_name="sonnet")

    assert isinstance(error, ClaudeCodeOverloadedError)
    assert isinstance(error, ModelOverloadedError)  # FallbackModel and durable retries treat it as transient
    assert error.status_code == 529
    assert not outcome.recovered


def test_a_contradictory_result_after_an_api_error_is_not_recovered():
    outcome = contradictory(result="API Error: boom", stop_reason="end_turn")
    outcome.api_error_kind = "unknown"

    assert result_error(outcome, model_name="sonnet") is not None
    assert not outcome.recovered
