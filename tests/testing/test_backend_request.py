"""Unit tests: Anthropic request -> pydantic-ai messages, noise stripping, and RecordedRequest helpers."""

from __future__ import annotations

import base64
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model.testing import RecordedRequest, strip_noise
from claudecode_model.testing._request import parse_request
from claudecode_model.testing._sse import content_blocks
from tests._support.requests import recorded

PNG = b"\x89PNG\r\n\x1a\nfake-image-bytes"
BILLING = "x-anthropic-billing-header: cc_version=2.1.330.d01; cc_entrypoint=sdk-py;"
AGENT_SDK = "You are a Claude agent, built on Anthropic's Claude Agent SDK."


def cli_like_body() -> dict[str, Any]:
    """A request shaped like the CLI's: own system blocks, reminders, a mid-conversation system message."""
    return {
        "model": "claude-sonnet-4-5",
        "stream": True,
        "system": [
            {"type": "text", "text": BILLING},
            {"type": "text", "text": AGENT_SDK, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be brief."},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "<system-reminder>\nAs you answer, use this context.\n</system-reminder>",
                    },
                    {"type": "text", "text": "What is in this image?"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(PNG).decode(),
                        },
                    },
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "# Environment\nPlatform: linux"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look at it.", "signature": "sig-1"},
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_01", "name": "mcp__t__echo", "input": {"text": "a"}},
                    {"type": "tool_use", "id": "toolu_02", "name": "mcp__t__fail", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": [
                            {"type": "text", "text": "echoed:a"},
                            {"type": "text", "text": "<total_tokens>180000 tokens left</total_tokens>"},
                        ],
                    },
                    {"type": "tool_result", "tool_use_id": "toolu_02", "content": "boom", "is_error": True},
                    {"type": "text", "text": "<system-reminder>todo list is empty</system-reminder>"},
                ],
            },
        ],
        "tools": [
            {
                "name": "mcp__t__echo",
                "description": "Echo the text back",
                "input_schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            },
            {"name": "mcp__t__fail", "input_schema": {"type": "object", "properties": {}}},
        ],
    }


def record(body: dict[str, Any]) -> RecordedRequest:
    return recorded(body, path="/v1/messages?beta=true")


def test_strip_noise_removes_reminders_and_keeps_clean_text_unchanged() -> None:
    assert strip_noise("  plain text  ") == "  plain text  "
    assert strip_noise("<system-reminder>\nx\n</system-reminder>") == ""
    assert strip_noise("result<total_tokens>123 tokens left</total_tokens>") == "result"
    assert strip_noise("<system-reminder>a</system-reminder>\nhello\n<system-reminder>b</system-reminder>") == "hello"


def test_cli_like_request_translates_to_pydantic_ai_messages() -> None:
    parsed = parse_request(cli_like_body())

    assert parsed.system_blocks == [BILLING, AGENT_SDK, "Be brief."]
    first, assistant, results = parsed.messages
    assert isinstance(first, ModelRequest)
    system_parts = [p for p in first.parts if isinstance(p, SystemPromptPart)]
    assert [p.content for p in system_parts] == [
        BILLING,
        AGENT_SDK,
        "Be brief.",
        "# Environment\nPlatform: linux",
    ]
    [user] = [p for p in first.parts if isinstance(p, UserPromptPart)]
    assert user.content == ["What is in this image?", BinaryContent(PNG, media_type="image/png")]

    assert isinstance(assistant, ModelResponse)
    thinking, text, echo_call, fail_call = assistant.parts
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.content, thinking.signature) == ("Look at it.", "sig-1")
    assert text == TextPart("Let me check.")
    assert isinstance(echo_call, ToolCallPart)
    assert (echo_call.tool_name, echo_call.args, echo_call.tool_call_id) == (
        "mcp__t__echo",
        {"text": "a"},
        "toolu_01",
    )
    assert isinstance(fail_call, ToolCallPart)
    assert fail_call.tool_name == "mcp__t__fail"

    assert isinstance(results, ModelRequest)
    ok, failed = results.parts
    assert isinstance(ok, ToolReturnPart)
    assert (ok.tool_name, ok.content, ok.tool_call_id, ok.outcome) == (
        "mcp__t__echo",
        "echoed:a",
        "toolu_01",
        "success",
    )
    assert isinstance(failed, ToolReturnPart)
    assert (failed.tool_name, failed.content, failed.outcome) == ("mcp__t__fail", "boom", "failed")

    echo_tool, fail_tool = parsed.tools
    assert echo_tool.name == "mcp__t__echo"
    assert echo_tool.description == "Echo the text back"
    assert echo_tool.parameters_json_schema["required"] == ["text"]
    assert fail_tool.description is None


def test_recorded_request_helpers() -> None:
    request = record(cli_like_body())

    assert request.system == f"{BILLING}\n\n{AGENT_SDK}\n\nBe brief."
    assert request.model == "claude-sonnet-4-5"
    assert request.tool_names == ["mcp__t__echo", "mcp__t__fail"]
    assert request.tool("mcp__t__fail").name == "mcp__t__fail"
    assert request.last_user_text() == "What is in this image?"
    assert request.user_texts() == ["What is in this image?"]
    assert request.tool_results() == [("toolu_01", "echoed:a", False), ("toolu_02", "boom", True)]
    assert [c.tool_call_id for c in request.tool_calls()] == ["toolu_01", "toolu_02"]
    assert request.has_image()
    assert request.has_thinking()
    assert not request.has_document()
    assert "<system-reminder>" in str(request.raw)  # the record keeps the noise


def test_plain_string_content_and_string_system() -> None:
    parsed = parse_request({"system": "Top.", "messages": [{"role": "user", "content": "hello"}]})

    [message] = parsed.messages
    assert isinstance(message, ModelRequest)
    system, user = message.parts
    assert isinstance(system, SystemPromptPart)
    assert system == SystemPromptPart("Top.", timestamp=system.timestamp)
    assert isinstance(user, UserPromptPart)
    assert user.content == "hello"
    assert parsed.tools == []


def test_media_sources_map_to_pydantic_ai_content() -> None:
    pdf = b"%PDF-1.4 fake"
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.png"}},
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": base64.b64encode(pdf).decode(),
                        },
                    },
                    {"type": "document", "source": {"type": "url", "url": "https://example.invalid/a.pdf"}},
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
                    },
                    {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
                    {"type": "mystery"},
                ],
            }
        ]
    }
    [message] = parse_request(body).messages
    assert isinstance(message, ModelRequest)
    [user] = message.parts
    assert isinstance(user, UserPromptPart)
    assert user.content == [
        ImageUrl("https://example.invalid/cat.png"),
        BinaryContent(pdf, media_type="application/pdf"),
        DocumentUrl("https://example.invalid/a.pdf"),
        BinaryContent(b"notes", media_type="text/plain"),
    ]
    assert record(body).has_document()


def test_tool_result_with_an_image_keeps_text_and_image() -> None:
    body = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_9", "name": "shot", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_9",
                        "content": [
                            {"type": "text", "text": "screenshot"},
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                            },
                        ],
                    }
                ],
            },
        ]
    }
    request = record(body)
    result = request.messages[1]
    assert isinstance(result, ModelRequest)
    [part] = result.parts
    assert isinstance(part, ToolReturnPart)
    assert part.tool_name == "shot"
    assert part.content == ["screenshot", BinaryContent(b"hi", media_type="image/png")]
    assert request.tool_results() == [("toolu_9", "screenshot", False)]
    assert request.has_image()


def test_unknown_tool_use_id_and_garbage_are_tolerated() -> None:
    body: dict[str, Any] = {
        "messages": [
            "not a message",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "orphan"}],
            },
            {
                "role": "assistant",
                "content": [{"type": "redacted_thinking", "data": "opaque"}, {"type": "server_x"}],
            },
            {"role": "user", "content": 42},
        ],
        "tools": ["not a tool", {"name": "bare"}],
    }
    parsed = parse_request(body)
    orphan_request, assistant, empty = parsed.messages
    assert isinstance(orphan_request, ModelRequest)
    [orphan] = orphan_request.parts
    assert isinstance(orphan, ToolReturnPart)
    assert orphan.tool_name == "unknown_tool"
    assert isinstance(assistant, ModelResponse)
    [redacted] = assistant.parts
    assert isinstance(redacted, ThinkingPart)
    assert redacted.signature == "opaque"
    assert isinstance(empty, ModelRequest)
    assert list(empty.parts) == []
    [bare] = parsed.tools
    assert bare.name == "bare"
    assert bare.parameters_json_schema == {"type": "object", "properties": {}}
    assert parse_request({}).messages == []


def test_assistant_response_round_trips_through_anthropic_blocks() -> None:
    response = ModelResponse(
        parts=[
            ThinkingPart("plan", signature="sig-9"),
            TextPart("Calling two tools."),
            ToolCallPart("mcp__t__echo", {"text": "x", "n": [1, 2]}, tool_call_id="toolu_abc"),
            ToolCallPart("mcp__t__other", {}, tool_call_id="toolu_def"),
        ]
    )
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": content_blocks(response)},
        ]
    }
    parsed_response = parse_request(body).messages[1]
    assert isinstance(parsed_response, ModelResponse)
    assert [type(p) for p in parsed_response.parts] == [type(p) for p in response.parts]
    for original, parsed in zip(response.parts, parsed_response.parts, strict=True):
        match original:
            case ThinkingPart():
                assert isinstance(parsed, ThinkingPart)
                assert (parsed.content, parsed.signature) == (original.content, original.signature)
            case TextPart():
                assert parsed == original
            case ToolCallPart():
                assert isinstance(parsed, ToolCallPart)
                assert (parsed.tool_name, parsed.args, parsed.tool_call_id) == (
                    original.tool_name,
                    original.args,
                    original.tool_call_id,
                )
            case _:
                raise AssertionError(original)


EXPANDED_FILE_BODY = {
    "messages": [
        {"role": "user", "content": "<system-reminder>\nCalled the Read tool with: secret.txt\n</system-reminder>"},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "<system-reminder>\nResult of calling the Read tool:\n1\tSECRET\n</system-reminder>",
                },
                {"type": "text", "text": "Summarize @secret.txt"},
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": "# Environment\nToday's date is 2026-11-26."}]},
    ]
}
"""What the CLI sends for a prompt whose ``@file`` it expanded: the file as reminders in the user turn."""


def test_cli_additions_name_the_blocks_the_cli_wrote():
    from claudecode_model.testing import CLIAddition, is_cli_addition

    request = recorded(EXPANDED_FILE_BODY)
    additions = request.cli_additions()
    assert [(a.message_index, a.role) for a in additions] == [(0, "user"), (1, "user"), (2, "system")]
    assert isinstance(additions[0], CLIAddition)
    assert "SECRET" in additions[1].text
    assert not is_cli_addition("Summarize @secret.txt")
    # What a brain sees by default hides them; the recorded raw request keeps them.
    assert request.user_texts() == ["Summarize @secret.txt"]


def test_a_brain_can_be_shown_the_cli_additions():
    shown = parse_request(EXPANDED_FILE_BODY, keep_cli_additions=True)
    texts = [p.content for m in shown.messages for p in m.parts if isinstance(p, UserPromptPart)]
    assert any("SECRET" in str(text) for text in texts)
    hidden = parse_request(EXPANDED_FILE_BODY)
    assert not any("SECRET" in str(getattr(p, "content", "")) for m in hidden.messages for p in m.parts)
