"""Running an agent into an API error, and the checks the in-memory and the real-CLI error tests share."""

from __future__ import annotations

from typing import TypeVar

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelServerError,
)

from claudecode_model import ClaudeCodeAPIError, ClaudeCodeContextWindowExceededError, ClaudeCodeModel

_E = TypeVar("_E", bound=BaseException)


async def run_error(model: ClaudeCodeModel, expected: type[_E]) -> _E:
    """Run an agent on ``model`` once, which must raise ``expected``; close the model; return the error."""
    try:
        with pytest.raises(expected) as raised:
            await Agent(model).run("hello")
    finally:
        await model.aclose()
    return raised.value


def assert_http_class(
    error: ClaudeCodeAPIError,
    category: type[Exception],
    not_category: type[Exception] | None,
    status: int,
    in_stream: bool,
    error_type: str,
) -> None:
    """``error`` is the pydantic-ai HTTP error class ``category`` (and not ``not_category``) with these fields."""
    assert isinstance(error, ModelHTTPError)
    assert isinstance(error, category)
    if not_category is not None:
        assert not isinstance(error, not_category)
    assert (error.status_code, error.in_stream) == (status, in_stream)
    assert error.provider_error_type == error_type


def assert_prompt_too_long(error: ClaudeCodeContextWindowExceededError, *, compaction: bool) -> None:
    """``error`` is a (not transient) context window error, with the sizes when the CLI said them (compaction)."""
    assert isinstance(error, ModelContextWindowExceededError)
    assert not isinstance(error, ModelConnectionError | ModelServerError)  # not transient
    assert error.status_code == 400
    if compaction:  # the CLI says the sizes when it explains why it could not compact
        assert (error.prompt_tokens, error.limit_tokens) == (250_000, 200_000)
        assert "the prompt is 250000 tokens, the limit 200000" in str(error)
    else:  # without compaction it reports only "Prompt is too long"
        assert (error.prompt_tokens, error.limit_tokens) == (None, None)
        assert "Context window exceeded: the prompt is too long" in str(error)
