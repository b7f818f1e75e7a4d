"""The inactivity bound's default, its setting, the CLI timeouts set below it, and the spent fields of errors."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, cast

import pytest
from claude_agent_sdk import StreamEvent, SystemMessage
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
from claudecode_model._turns.watchdog import InactivityWatchdog
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
        check_request_settings({"claude_code_inactivity_timeout": value})


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
    assert isinstance(again, ClaudeCodeInactivityError)
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


class FakeLoop:
    """An event loop clock the test moves by hand; ``call_at`` keeps the one callback due."""

    def __init__(self) -> None:
        self.now = 0.0
        self.due: tuple[float, Callable[[], None]] | None = None

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> FakeHandle:
        self.due = (when, callback)
        return FakeHandle(self)

    def advance(self, seconds: float) -> None:
        """Move the clock, running the callback when it falls due (it may schedule the next)."""
        self.now += seconds
        while self.due is not None and self.due[0] <= self.now:
            _, callback = self.due
            self.due = None
            callback()


class FakeHandle:
    def __init__(self, loop: FakeLoop) -> None:
        self._loop = loop

    def cancel(self) -> None:
        self._loop.due = None


class FakeSession:
    def __init__(self) -> None:
        self.loop = FakeLoop()
        self.observer: Any = None
        self.waiting_for_tools = False
        self.failed: list[BaseException] = []

    def fail_turn(self, error: BaseException) -> bool:
        self.failed.append(error)
        return True


def token() -> StreamEvent:
    return StreamEvent(uuid="u", session_id="s", event={"type": "content_block_delta"}, parent_tool_use_id=None)


def retry(delay_ms: int) -> SystemMessage:
    return SystemMessage(subtype="api_retry", data={"attempt": 1, "retry_delay_ms": delay_ms})


def test_a_stall_that_every_retry_repeats_ends_within_the_bound_and_backoffs():
    session = FakeSession()
    watchdog = InactivityWatchdog(cast("Any", session), 360.0, "sonnet")
    watchdog.start()
    watchdog.heard(token())
    session.loop.advance(300)  # the CLI gives up on the stalled attempt and retries after 2 s
    watchdog.heard(retry(2000))
    session.loop.advance(61)  # the retry stalls too: 361 s since the last token, 2 s of them backoff
    assert session.failed == []
    session.loop.advance(1.5)

    [error] = session.failed
    assert isinstance(error, ClaudeCodeInactivityError)


def test_fast_failing_retries_count_only_their_attempts_and_a_token_resets_the_bound():
    session = FakeSession()
    watchdog = InactivityWatchdog(cast("Any", session), 10.0, "sonnet")
    watchdog.start()
    for _ in range(5):  # attempts that fail at once, each followed by an 8 s backoff: 40 s, no silence beyond 10 s
        session.loop.advance(1)
        watchdog.heard(retry(8000))
        session.loop.advance(8)
    watchdog.heard(token())
    session.loop.advance(9)

    assert session.failed == []
