"""``ClaudeCodeModel.count_tokens``: a request's input tokens, estimated without an API request or a CLI process.

Claude Code counts a context it has no API usage for at one token per four characters: its context usage (the SDK's
``get_context_usage()``, which makes no API request) reported the system prompt at that rate and the agent's MCP
tools at 0 before they are loaded, so asking it adds nothing to counting here, the same way, everything the request
will carry: the system prompt (instructions, system prompts, ``claude_code_system_prompt_append``), the tools as the
CLI offers them, the text the CLI adds (billing header, identity line, environment turn), and the messages. See
``docs/settings-parity.md``, "Counting tokens".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai.messages import BinaryContent, ModelMessage, SystemPromptPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.usage import RequestUsage

from claudecode_model._compat import request_instructions
from claudecode_model._tools.execution import DEFAULT_SERVER_NAME

__all__ = ["CHARS_PER_TOKEN", "CLI_ADDED_CHARACTERS", "IMAGE_TOKENS", "count_request_tokens"]

CHARS_PER_TOKEN = 4
"""Claude Code's own estimate for text it has no API usage for."""

CLI_ADDED_CHARACTERS = 1_100
"""The text Claude Code adds to every request: a billing header (73 characters), an identity line (62) and an
environment turn (914 for a short working directory outside git; about 1,600 in a git worktree)."""

IMAGE_TOKENS = 1_600
"""An image or document, counted as about a 1,000 x 1,000 pixel image."""


def count_request_tokens(
    messages: Sequence[ModelMessage], settings: Mapping[str, Any] | None, params: ModelRequestParameters
) -> RequestUsage:
    """The estimated input tokens of a request."""
    system = [part.content for m in messages for part in m.parts if isinstance(part, SystemPromptPart)]
    system += [
        request_instructions(list(messages), params) or "",
        (settings or {}).get("claude_code_system_prompt_append", ""),
    ]
    tools = [
        {
            "name": f"mcp__{DEFAULT_SERVER_NAME}__{tool.name}",
            "description": tool.description or "",
            "input_schema": tool.parameters_json_schema,
        }
        for tool in [*params.function_tools, *params.output_tools]
    ]
    text = "".join(system) + (json.dumps(tools) if tools else "")
    tokens = _estimate(text) + math.ceil(CLI_ADDED_CHARACTERS / CHARS_PER_TOKEN) + _message_tokens(messages)
    return RequestUsage(input_tokens=tokens)


def _message_tokens(messages: Sequence[ModelMessage]) -> int:
    """The estimated tokens of the conversation's messages (system prompts are counted with the system prompt)."""
    text: list[str] = []
    media = 0
    for message in messages:
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                continue
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                for item in part.content:
                    if isinstance(item, str):
                        text.append(item)
                    elif isinstance(item, BinaryContent) or hasattr(item, "url"):
                        media += 1
            elif isinstance(part, ToolCallPart):
                text.append(part.tool_name + part.args_as_json_str())
            elif (content := getattr(part, "content", None)) is not None:
                text.append(content if isinstance(content, str) else json.dumps(content, default=str))
    return _estimate("".join(text)) + media * IMAGE_TOKENS


def _estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)
