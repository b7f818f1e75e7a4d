"""End-to-end tests of ClaudeCodeModel: the real Claude Code CLI against the offline backend."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from pydantic_ai import Agent, ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from claudecode_model import (
    ClaudeCodeAuthenticationError,
    ClaudeCodeModel,
    ClaudeCodeServerError,
    CLINotFoundError,
    CLITimeoutError,
)
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.agents import run_and_close
from tests._support.brains import echo_brain
from tests._support.responses import details

pytestmark = pytest.mark.cli


@pytest.fixture
def model(model: ClaudeCodeModel, claude_backend: OfflineBackend) -> ClaudeCodeModel:
    """The shared CLI model, with the backend answering through ``echo_brain``."""
    claude_backend.set_brain(FunctionModel(echo_brain))
    return model


async def test_text_answer_and_instructions_reach_the_cli(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model, instructions="Answer like a pirate.", system_prompt="You are a test agent.")

    result = await agent.run("hello there")

    assert result.output == "echo: hello there"
    request = claude_backend.requests[-1]
    assert "Answer like a pirate." in request.system
    assert "You are a test agent." in request.system
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.provider_name == "claude-code"
    assert response.model_name == claude_backend.model_name  # the model the CLI used, not "default"
    assert response.finish_reason == "stop"
    details = response.provider_details or {}
    assert details["session_id"]
    assert details["num_turns"] == 1
    assert {"duration_ms", "duration_api_ms", "stop_reason", "terminal_reason", "permission_denials"} <= set(details)


async def test_usage_and_cost_per_request(model: ClaudeCodeModel):
    agent = Agent(model)
    first = await agent.run("one")
    second = await agent.run("two", message_history=first.all_messages())

    first_response, second_response = first.all_messages()[-1], second.all_messages()[-1]
    assert isinstance(first_response, ModelResponse)
    assert isinstance(second_response, ModelResponse)
    first_usage, second_usage = first_response.usage, second_response.usage
    assert first_usage.input_tokens > 0
    assert first_usage.output_tokens > 0
    assert isinstance(first_usage.cost, Decimal)
    assert first_usage.cost > 0
    # The CLI reports cumulative session cost; each response carries only its own share.
    total = details(second_response)["total_cost_usd"]
    assert second_usage.cost is not None
    assert float(first_usage.cost + second_usage.cost) == pytest.approx(total, rel=1e-6)


async def test_second_turn_continues_the_live_session(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    first = await agent.run("remember the word kiwi")
    second = await agent.run("what was the word?", message_history=first.all_messages())

    first_session = details(first.all_messages()[-1])["session_id"]
    second_session = details(second.all_messages()[-1])["session_id"]
    assert first_session == second_session
    seen = claude_backend.requests[-1].messages
    texts = [str(part.content) for message in seen for part in message.parts if hasattr(part, "content")]
    assert "remember the word kiwi" in texts
    assert "echo: remember the word kiwi" in texts
    assert texts[-1] == "what was the word?"


async def test_history_resumes_in_a_new_process(claude_backend: OfflineBackend):
    claude_backend.set_brain(FunctionModel(echo_brain))
    env = claude_backend.cli_env()
    first_model = ClaudeCodeModel(env=env, keep_sessions=0)
    first = await Agent(first_model).run("first question")
    second = await run_and_close(ClaudeCodeModel(env=env), "follow up", message_history=first.all_messages())

    assert second.output == "echo: follow up"
    seen = claude_backend.requests[-1]
    assert [m.kind for m in seen.messages][-3:] == ["request", "response", "request"]
    assert "first question" in seen.user_texts()
    session = details(second.all_messages()[-1])["session_id"]
    assert session == details(first.all_messages()[-1])["session_id"]


async def test_foreign_history_is_replayed_faithfully(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    other = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("from another model")])))
    earlier = await other.run("question for the other model")

    result = await Agent(model).run("and now for claude code", message_history=earlier.all_messages())

    assert result.output == "echo: and now for claude code"
    seen = claude_backend.requests[-1].messages
    user_and_text = [
        (message.kind, str(part.content))
        for message in seen
        for part in message.parts
        if isinstance(part, UserPromptPart | TextPart)
    ]
    assert user_and_text[-3:] == [
        ("request", "question for the other model"),
        ("response", "from another model"),
        ("request", "and now for claude code"),
    ]


async def test_401_is_a_typed_model_http_error(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(401, "invalid x-api-key"))

    with pytest.raises(ClaudeCodeAuthenticationError) as caught:
        await Agent(model).run("hello")

    error = caught.value
    assert isinstance(error, ModelHTTPError)
    assert error.status_code == 401
    assert "API key" in str(error.body)  # the CLI words a 401 itself
    assert error.cli_message == error.body


async def test_500_is_a_typed_server_error(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.http(500, "internal trouble"))

    with pytest.raises(ClaudeCodeServerError) as caught:
        await Agent(model).run("hello")

    assert caught.value.status_code == 500
    # The model still works for the next run.
    assert (await Agent(model).run("again")).output == "echo: again"


async def test_timeout_stops_the_cli(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.stall(30))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 2})

    with pytest.raises(CLITimeoutError):
        await Agent(model).run("hello")
    await model.aclose()


async def test_cancellation_stops_the_cli(claude_backend: OfflineBackend):
    claude_backend.fail_next(Failure.stall(30))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    task = asyncio.create_task(Agent(model).run("hello"))
    while not claude_backend.requests:
        await asyncio.sleep(0.05)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await model.aclose()


async def test_missing_cli_is_a_clear_error():
    model = ClaudeCodeModel(cli_path="/nonexistent/claude")

    with pytest.raises(CLINotFoundError, match="install"):
        await Agent(model).run("hello")


async def test_request_with_metadata_and_raw_messages(model: ClaudeCodeModel):
    from claude_agent_sdk import ResultMessage, SystemMessage
    from pydantic_ai.messages import ModelRequest

    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("meta please")])]

    full = await model.request_with_metadata(messages)
    raw = [message async for message in model.stream_messages([ModelRequest(parts=[UserPromptPart("raw")])])]

    assert full.response.parts[-1] == TextPart("echo: meta please")
    assert full.result is not None
    assert full.result.session_id == details(full.response)["session_id"]
    assert full.init["session_id"] == full.result.session_id
    assert isinstance(full.messages[-1], ResultMessage)
    assert isinstance(raw[0], SystemMessage)
    assert isinstance(raw[-1], ResultMessage)
    assert raw[-1].result == "echo: raw"
