"""claude-agent-sdk messages as the CLI sends them, for unit tests that feed the translator or the error mapping."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage


def result_message(**fields: Any) -> ResultMessage:
    """A turn's ``ResultMessage``: a successful one-turn result unless ``fields`` say otherwise."""
    base: dict[str, Any] = {
        "subtype": "success",
        "duration_ms": 10,
        "duration_api_ms": 5,
        "is_error": False,
        "num_turns": 1,
        "session_id": "sess-1",
    }
    return ResultMessage(**{**base, **fields})
