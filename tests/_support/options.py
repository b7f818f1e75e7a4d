"""Building a request's SDK options without a model: the defaults the option tests start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from pydantic_ai.settings import ThinkingLevel

from claudecode_model._sessions.options import RequestNeeds, build_options


def options_for(
    settings: dict[str, Any],
    *,
    model_name: str | None = None,
    cli_path: Path = Path("/bin/true"),
    system_prompt: str | None = "sys",
    thinking: ThinkingLevel | None = None,
) -> tuple[ClaudeAgentOptions, str]:
    """The options and session signature :func:`build_options` gives for ``settings``, with no base environment."""
    return build_options(
        model_name=model_name,
        cli_path=cli_path,
        settings=settings,  # type: ignore[arg-type]
        needs=RequestNeeds(system_prompt=system_prompt, thinking=thinking),
        base_env={},
        stderr=lambda line: None,
    )
