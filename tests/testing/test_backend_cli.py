"""End-to-end: the real Claude Code CLI (bundled in claude-agent-sdk) against the offline backend.

Run inside ``scripts/loopback-only`` so nothing can leave the machine.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import TYPE_CHECKING, Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultError,
    ResultMessage,
    SdkMcpTool,
    ThinkingBlock,
    create_sdk_mcp_server,
    query,
    tool,
)
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model.testing import Failure, OfflineBackend, ScriptedTurn
from tests._support.brains import tool_returns

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.cli  # the autouse guard in tests/conftest.py checks for leaked processes


def _options(backend: OfflineBackend, **overrides: Any) -> ClaudeAgentOptions:
    settings: dict[str, Any] = {
        "env": backend.cli_env(),
        "tools": [],
        "setting_sources": [],
        "strict_mcp_config": True,
        "permission_mode": "dontAsk",
        "system_prompt": "Be brief.",
        "max_turns": 2,
    }
    settings.update(overrides)
    return ClaudeAgentOptions(**settings)


async def _collect(prompt: str, options: ClaudeAgentOptions, into: list[Any]) -> None:
    async for message in query(prompt=prompt, options=options):
        into.append(message)


async def _run(prompt: str, options: ClaudeAgentOptions) -> tuple[list[Any], ResultMessage]:
    messages: list[Any] = []
    await _collect(prompt, options, messages)
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1
    return messages, results[0]


@tool("echo", "Echo the text back", {"text": str})
async def _echo(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"echoed:{args['text']}"}]}


def _echo_server(*tools: SdkMcpTool[Any]) -> Any:
    return create_sdk_mcp_server("t", tools=list(tools) or [_echo])


async def test_text_reply_and_system_prompt_reach_the_backend() -> None:
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Hello from the offline brain.")])

    async with OfflineBackend(brain) as backend:
        _, result = await _run("hi", _options(backend))

        assert result.is_error is False
        assert result.result == "Hello from the offline brain."
        assert len(backend.requests) == 1
        request = backend.requests[0]
        assert request.stream is True
        assert request.path.startswith("/v1/messages")
        assert "Be brief." in request.system_blocks
        assert "Be brief." in request.system
        first = request.messages[0]
        assert isinstance(first, ModelRequest)
        assert "Be brief." in [p.content for p in first.parts if isinstance(p, SystemPromptPart)]
        assert request.last_user_text().startswith("hi")
        assert request.headers["x-api-key"]
    assert not backend.running


async def test_brain_calls_an_in_process_mcp_tool_and_sees_its_result() -> None:
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1]) if messages else []
        if returns:
            return ModelResponse(parts=[TextPart(f"tool said {returns[0].content}")])
        assert "mcp__t__echo" in [t.name for t in info.function_tools]
        return ModelResponse(parts=[TextPart("Calling."), ToolCallPart("mcp__t__echo", {"text": "abc"})])

    async with OfflineBackend(FunctionModel(brain)) as backend:
        options = _options(backend, mcp_servers={"t": _echo_server()}, allowed_tools=["mcp__t"], max_turns=3)
        messages, result = await _run("use echo", options)

        assert result.result == "tool said echoed:abc"
        assert len(backend.requests) == 2
        first, second = backend.requests
        assert "mcp__t__echo" in first.tool_names
        schema = first.tool("mcp__t__echo").parameters_json_schema
        assert "text" in schema["properties"]
        [call] = second.tool_calls()
        assert call.tool_name == "mcp__t__echo"
        assert call.tool_call_id.startswith("toolu_")
        assert second.tool_results() == [(call.tool_call_id, "echoed:abc", False)]
        assert any(isinstance(m, AssistantMessage) for m in messages)


async def test_default_brain_calls_each_tool_once_then_answers() -> None:
    async with OfflineBackend() as backend:
        options = _options(backend, mcp_servers={"t": _echo_server()}, allowed_tools=["mcp__t"], max_turns=3)
        _, result = await _run("go", options)

        assert result.is_error is False
        assert len(backend.requests) == 2
        [(_, text, is_error)] = backend.requests[1].tool_results()
        assert text.startswith("echoed:")
        assert is_error is False
        assert result.result is not None
        assert "echoed:" in result.result


async def test_scripted_turns_with_the_pytest_fixture(claude_backend: OfflineBackend) -> None:
    claude_backend.set_brain([ScriptedTurn.tool_call("mcp__t__echo", {"text": "xyz"}), "all done"])
    options = _options(claude_backend, mcp_servers={"t": _echo_server()}, allowed_tools=["mcp__t"], max_turns=3)
    _, result = await _run("go", options)

    assert result.result == "all done"
    assert claude_backend.requests[1].tool_results()[0].text == "echoed:xyz"


async def test_injected_401_reaches_the_cli_as_an_api_error() -> None:
    async with OfflineBackend("never sent") as backend:
        backend.fail_next(Failure.http(401, "invalid x-api-key"))
        messages: list[Any] = []
        with pytest.raises(ResultError, match="Invalid API key"):
            await _collect("hi", _options(backend), messages)

        [result] = [m for m in messages if isinstance(m, ResultMessage)]
        assert result.is_error is True
        assert result.api_error_status == 401
        assert len(backend.requests) == 1


async def test_sse_error_makes_the_cli_retry_without_streaming() -> None:
    async with OfflineBackend(["answered without streaming"]) as backend:
        backend.fail_next(Failure.sse_error("overloaded_error", "Overloaded"))
        _, result = await _run("hi", _options(backend))

        assert result.result == "answered without streaming"
        assert [r.stream for r in backend.requests] == [True, False]


async def test_thinking_and_tool_use_round_trip_through_the_cli() -> None:
    script: list[ScriptedTurn | str] = [
        ScriptedTurn(
            [ThinkingPart("I should echo.", signature="sig-xyz"), ToolCallPart("mcp__t__echo", {"text": "q"})]
        ),
        "finished",
    ]
    async with OfflineBackend(script) as backend:
        options = _options(backend, mcp_servers={"t": _echo_server()}, allowed_tools=["mcp__t"], max_turns=3)
        messages, result = await _run("think", options)

        assert result.result == "finished"
        second = backend.requests[1]
        assert second.has_thinking()
        [assistant] = [m for m in second.messages if isinstance(m, ModelResponse)]
        thinking = assistant.parts[0]
        assert isinstance(thinking, ThinkingPart)
        assert (thinking.content, thinking.signature) == ("I should echo.", "sig-xyz")
        assert [r.text for r in second.tool_results()] == ["echoed:q"]
        assert any(
            isinstance(block, ThinkingBlock) and block.thinking == "I should echo."
            for m in messages
            if isinstance(m, AssistantMessage)
            for block in m.content
        )


async def test_default_brain_fills_the_structured_output_tool() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["answer", "count"],
    }
    async with OfflineBackend() as backend:
        options = _options(backend, output_format={"type": "json_schema", "schema": schema})
        _, result = await _run("give me json", options)

        assert result.is_error is False
        assert isinstance(result.structured_output, dict)
        assert isinstance(result.structured_output["answer"], str)
        assert isinstance(result.structured_output["count"], int)
        assert "StructuredOutput" in backend.requests[0].tool_names


async def test_a_second_turn_in_the_same_session_carries_the_first_exchange() -> None:
    async with OfflineBackend(["first answer", "second answer"]) as backend:
        async with ClaudeSDKClient(_options(backend)) as client:
            replies: list[str | None] = []
            for prompt in ("first question", "second question"):
                await client.query(prompt)
                replies.extend([m.result async for m in client.receive_response() if isinstance(m, ResultMessage)])

        assert replies == ["first answer", "second answer"]
        second = backend.requests[1]
        assert second.user_texts() == ["first question", "second question"]
        responses = [m for m in second.messages if isinstance(m, ModelResponse)]
        assert [p.content for m in responses for p in m.parts if isinstance(p, TextPart)] == ["first answer"]


def _tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2)))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


async def test_an_image_sent_in_streaming_mode_reaches_the_brain() -> None:
    seen: list[list[ModelMessage]] = []

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("a red square")])

    async def prompt() -> AsyncIterator[dict[str, Any]]:
        content = [
            {"type": "text", "text": "What is this?"},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(_tiny_png()).decode(),
                },
            },
        ]
        yield {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
            "session_id": "default",
        }

    async with OfflineBackend(brain) as backend:
        results: list[ResultMessage] = []
        async for message in query(prompt=prompt(), options=_options(backend)):
            if isinstance(message, ResultMessage):
                results.append(message)

        assert [r.result for r in results] == ["a red square"]
        request = backend.requests[0]
        assert request.has_image()
        assert request.last_user_text().startswith("What is this?")
        user_parts = [
            p for m in seen[0] if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
        ]
        images = [
            c for p in user_parts if not isinstance(p.content, str) for c in p.content if isinstance(c, BinaryContent)
        ]
        assert len(images) == 1
        assert images[0].media_type.startswith("image/")


@pytest.mark.parametrize(("status", "asked"), [(400, 3), (404, 2)])
async def test_a_400_or_404_is_asked_again_even_with_the_clis_retries_off(status: int, asked: int) -> None:
    """What docs/testing.md says of ``cli_env()``: the CLI asks again after these by itself (a 400 twice, a 404
    once), so fewer injected failures than it asks do not reach the agent; that many do."""
    from pydantic_ai import Agent

    from claudecode_model import ClaudeCodeModel, ClaudeCodeRequestRejectedError

    async with OfflineBackend("answered on the second request") as backend:
        model = ClaudeCodeModel(env=backend.cli_env(), keep_sessions=0, spare_sessions=0)
        try:
            backend.fail_next(Failure.http(status), count=asked - 1)
            result = await Agent(model).run("hi")
            assert result.output == "answered on the second request"
            assert len(backend.requests) == asked

            backend.fail_next(Failure.http(status), count=asked)
            with pytest.raises(ClaudeCodeRequestRejectedError):
                await Agent(model).run("hi")
            assert len(backend.requests) == 2 * asked
        finally:
            await model.aclose()
