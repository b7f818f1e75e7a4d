"""pydantic-ai's ``tool_choice`` setting, honoured as ``AnthropicModel`` honours it where the CLI can.

Claude Code has no way to pass an API ``tool_choice``: it cannot force a tool call, and it offers every tool it was
given. So a request offers Claude only the tools the choice allows (``"none"``: no function tools and no native
tools; a named subset, a list or ``ToolOrOutput``: those tools and the output tools it keeps), as ``AnthropicModel``
does for a subset ("Anthropic doesn't support limiting tools via API arg"). Forcing follows pydantic-ai's rule for a
model that cannot force (the profile says ``supports_forced_tool_choice=False``): an explicit forcing choice
(``"required"``, a list) raises a ``UserError`` before anything starts, a forced choice pydantic-ai resolved itself
(an output tool's, when text output is not allowed) falls back to an unforced one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic_ai.models import ModelRequestParameters

from claudecode_model._compat import forcing_allowed, resolve_tool_choice

__all__ = ["FORCING_REASON", "offered_tools"]

FORCING_REASON = (
    "Claude Code cannot force a tool call (it sends no tool_choice to the API). "
    "Use tool_choice='auto', a ToolOrOutput subset, or 'none'."
)


def offered_tools(
    model_name: str, settings: Mapping[str, Any] | None, params: ModelRequestParameters
) -> ModelRequestParameters:
    """``params`` with only the tools the request's ``tool_choice`` lets Claude call; raises pydantic-ai's
    ``UserError`` for an explicit forcing choice."""
    resolved = resolve_tool_choice(settings, params)
    if resolved == "auto":
        return params
    mode = resolved if isinstance(resolved, str) else resolved[0]
    if mode == "required":
        forcing_allowed(model_name, settings, FORCING_REASON)  # raises for an explicit forcing choice
    if resolved == "required":
        return params  # every tool, unforced: pydantic-ai asks again for an output tool if Claude answers in text
    if resolved == "none":
        return replace(params, function_tools=[], output_tools=[], native_tools=[])
    allowed: set[str] = set(resolved[1])
    return replace(
        params,
        function_tools=[tool for tool in params.function_tools if tool.name in allowed],
        output_tools=[tool for tool in params.output_tools if tool.name in allowed],
    )
