"""The inactivity bound's default, its setting, the CLI timeouts set below it, and the spent fields of errors."""

from __future__ import annotations

import pickle

import pytest
from pydantic_ai.exceptions import ModelAPIError, ModelTimeoutError
from pydantic_ai.usage import RequestUsage

from claudecode_model import ClaudeCodeInactivityError, ClaudeCodeModel, ClaudeCodeSettingsError
from claudecode_model._sessions.inactivity import (
    CLI_STREAM_IDLE_SECONDS,
    DEFAULT_INACTIVITY_TIMEOUT,
    cli_attempt_timeout,
    cli_timeout_env,
    inactivity_timeout,
)
from claudecode_model._settings_check import check_request_settings
from claudecode_model.exceptions import ClaudeCodeOverloadedError, api_error_for_status


def test_the_bound_is_on_by_default_above_the_clis_longest_silent_wait():
    assert inactivity_timeout({}) == DEFAULT_INACTIVITY_TIMEOUT == 360.0
    assert DEFAULT_INACTIVITY_TIMEOUT > CLI_STREAM_IDLE_SECONDS  # the CLI's stream watchdog gives up first


def test_the_setting_changes_or_turns_off_the_bound():
    assert inactivity_timeout({"claude_code_inactivity_timeout": 30}) == 30.0
    assert inactivity_timeout({"claude_code_inactivity_timeout": None}) is None
    assert cli_timeout_env({"claude_code_inactivity_timeout": None}, {}) == {}


def test_the_clis_api_timeout_is_set_below_the_bound(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("API_TIMEOUT_MS", raising=False)
    monkeypatch.delenv("CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS", raising=False)
    monkeypatch.delenv("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS", raising=False)

    assert cli_timeout_env({}, {}) == {"API_TIMEOUT_MS": "300000"}
    assert cli_timeout_env({"claude_code_inactivity_timeout": 120}, {}) == {
        "API_TIMEOUT_MS": "100000",
        "CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS": "100000",
        "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "100000",
    }
    for bound in (3, 12, 60, 120, 360, 900):
        assert cli_attempt_timeout(bound) >= 10  # never below what the CLI accepts
        assert cli_attempt_timeout(bound) < bound or bound < 12


def test_the_users_own_cli_timeouts_are_left_alone(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("API_TIMEOUT_MS", "900000")

    assert cli_timeout_env({}, {}) == {}
    assert "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS" not in cli_timeout_env(
        {"claude_code_inactivity_timeout": 60}, {"CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "5000"}
    )


@pytest.mark.parametrize("value", [0, -1, "soon"])
def test_a_bad_bound_is_refused_before_anything_starts(value: object):
    with pytest.raises(ClaudeCodeSettingsError, match="claude_code_inactivity_timeout"):
        check_request_settings({"claude_code_inactivity_timeout": value})  # type: ignore[typeddict-item]


def test_a_good_bound_and_none_are_accepted():
    check_request_settings({"claude_code_inactivity_timeout": 0.5})
    check_request_settings({"claude_code_inactivity_timeout": None})
    ClaudeCodeModel(settings={"claude_code_inactivity_timeout": None})


def test_the_inactivity_error_is_a_model_timeout_and_keeps_what_was_spent_when_pickled():
    error = ClaudeCodeInactivityError("sonnet", "Claude Code sent nothing for 360 s", timeout=360.0)
    error.usage, error.cost_usd, error.api_requests, error.reached_model = RequestUsage(input_tokens=5), 0.01, 2, True

    again = pickle.loads(pickle.dumps(error))

    assert isinstance(again, ModelTimeoutError)
    assert isinstance(again, ModelAPIError)
    assert again.phase == "read"
    assert (again.timeout, again.api_requests, again.reached_model, again.cost_usd) == (360.0, 2, True, 0.01)
    assert again.usage is not None
    assert again.usage.input_tokens == 5


def test_api_errors_keep_what_was_spent_when_pickled():
    error = api_error_for_status(529, "sonnet", "Overloaded")
    error.api_requests, error.reached_model, error.cost_usd = 3, False, 0.0

    again = pickle.loads(pickle.dumps(error))

    assert isinstance(again, ClaudeCodeOverloadedError)
    assert (again.api_requests, again.reached_model, again.cost_usd) == (3, False, 0.0)


def test_errors_raised_before_a_turn_say_nothing_of_spending():
    error = ClaudeCodeSettingsError("bad")
    assert (error.usage, error.cost_usd, error.api_requests, error.reached_model) == (None, None, None, None)
