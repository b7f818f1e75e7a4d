"""Steps of a ``ScriptedCLI`` turn that say what the real CLI says (recorded from Claude Code 2.1 with the offline
backend): a failed API request reported as an API error message and an error result."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelResponse, ToolCallPart

from claudecode_model.testing import CLIStep, ScriptedCLI


def api_error(
    status: int,
    error_type: str,
    text: str,
    *,
    error: str,
    code: str | None = None,
    in_stream: bool = False,
    terminal_reason: str = "api_error",
) -> list[CLIStep]:
    """The messages of a turn whose API request failed with ``status`` (the CLI's ``error`` category, its text); with
    ``in_stream``, the response's stream had started (``message_start``, then the stream's ``error`` event)."""
    fields: dict[str, Any] = {"api_error_status": status, "api_error_type": error_type}
    if code is not None:
        fields["api_error_code"] = code
    started: list[CLIStep] = []
    if in_stream:
        message = {"id": "msg_cut", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {}}
        started = [
            {"type": "stream_event", "event": {"type": "message_start", "message": message}},
            {"type": "stream_event", "event": {"type": "message_stop"}},
        ]
    reply = {
        "id": "synthetic",
        "model": "<synthetic>",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
    }
    return [
        *started,
        {
            "type": "assistant",
            "message": reply,
            "parent_tool_use_id": None,
            "error": error,
            "request_id": "req_scripted",
            "is_api_error_message": True,
            **fields,
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "duration_ms": 1,
            "duration_api_ms": 0,
            "num_turns": 1,
            "result": text,
            "stop_reason": "stop_sequence",
            "terminal_reason": terminal_reason,
            "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "output_tokens": 0},
            **fields,
        },
    ]


def calling(tool: str) -> ModelResponse:
    """A reply that calls the agent's tool ``tool`` (through the agent's MCP server, as Claude names it)."""
    return ModelResponse(parts=[ToolCallPart(f"mcp__pydantic_tools__{tool}", {})])


def tool_then_text(tool: str) -> ScriptedCLI:
    """CLIs whose every turn calls ``tool``, then answers ``tool said <its result>``."""
    return ScriptedCLI(lambda message: [calling(tool), lambda results: f"tool said {results[-1]}"])
