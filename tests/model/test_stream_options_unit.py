"""Unit tests of how thinking settings become CLI options (unified ``thinking`` included)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ThinkingLevel

from claudecode_model import ClaudeCodeModel
from tests._support.options import options_for


def _options(unified: ThinkingLevel | None = None, **settings: Any) -> Any:
    options, _ = options_for(settings, model_name="claude-sonnet-4-5", system_prompt=None, thinking=unified)
    return options


@pytest.mark.parametrize(
    ("unified", "thinking", "effort"),
    [
        (None, None, None),
        (False, {"type": "disabled"}, None),
        (True, {"type": "adaptive"}, None),
        ("minimal", {"type": "enabled", "budget_tokens": 1024}, "low"),
        ("low", {"type": "enabled", "budget_tokens": 4096}, "low"),
        ("medium", {"type": "enabled", "budget_tokens": 10000}, "medium"),
        ("high", {"type": "enabled", "budget_tokens": 31999}, "high"),
        ("xhigh", {"type": "enabled", "budget_tokens": 48000}, "xhigh"),
        ("max", {"type": "enabled", "budget_tokens": 63999}, "max"),
    ],
)
def test_unified_thinking_from_the_request_parameters(
    unified: ThinkingLevel | None, thinking: dict[str, Any] | None, effort: str | None
):
    options = _options(unified)

    assert options.thinking == thinking
    assert options.effort == effort
    assert ("CLAUDE_CODE_DISABLE_THINKING" in options.env) is (unified is False)


def test_unified_thinking_still_read_from_settings_when_parameters_have_none():
    assert _options(None, thinking="low").thinking == {"type": "enabled", "budget_tokens": 4096}
    # The request parameters (where prepare_request puts it) win over a stale settings value.
    assert _options(False, thinking="low").thinking == {"type": "disabled"}


def test_provider_settings_override_the_unified_level():
    options = _options("high", claude_code_thinking=2048)
    assert options.thinking == {"type": "enabled", "budget_tokens": 2048}
    assert options.effort is None  # an explicit thinking setting means the unified level is not applied at all

    assert _options("high", claude_code_thinking="adaptive").thinking == {"type": "adaptive"}
    assert _options("high", claude_code_effort="low").effort == "low"
    assert _options(True, claude_code_thinking="disabled").env["CLAUDE_CODE_DISABLE_THINKING"] == "1"


def test_thinking_is_part_of_the_session_signature():
    def signature(unified: ThinkingLevel | None) -> str:
        _, digest = options_for({}, system_prompt=None, thinking=unified)
        return digest

    assert signature("low") == signature("low")
    assert len({signature(None), signature(False), signature("low"), signature("high")}) == 4


def test_prepare_request_moves_unified_thinking_into_the_parameters():
    """The reason the model passes ``params.thinking`` on: the settings no longer hold it after preparation."""
    model = ClaudeCodeModel("claude-sonnet-4-5")

    settings, params = model.prepare_request({"thinking": "low"}, ModelRequestParameters())

    assert "thinking" not in (settings or {})
    assert params.thinking == "low"
