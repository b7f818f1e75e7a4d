"""The offline backend counts tokens like the text it sees (about four characters a token), whatever the brain,
and its cost does not depend on whether the model was named."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from claudecode_model.testing._sse import estimate_tokens, request_text

pytestmark = pytest.mark.cli

ANSWER = "A plausible answer of about sixty characters, give or take."


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(ANSWER)])


@pytest.mark.parametrize(
    "brain", [FunctionModel(answer), TestModel(custom_output_text=ANSWER)], ids=["function", "test"]
)
async def test_tokens_are_about_a_quarter_of_the_characters(brain: object):
    async with OfflineBackend(brain) as backend:  # type: ignore[arg-type]
        model = ClaudeCodeModel(env=backend.cli_env(), keep_sessions=0)
        agent = Agent(model)
        short = await agent.run("Hello.")
        long = await agent.run("Hello. " + "word " * 800)  # 4,000 more characters
        requests = backend.requests

    assert short.usage.input_tokens == estimate_tokens(request_text(requests[0].raw))
    assert long.usage.input_tokens == estimate_tokens(request_text(requests[1].raw))
    assert 950 <= long.usage.input_tokens - short.usage.input_tokens <= 1050
    assert short.usage.output_tokens == estimate_tokens(ANSWER) == 15


async def test_input_tokens_limit_means_something_offline():
    async with OfflineBackend(FunctionModel(answer)) as backend:
        model = ClaudeCodeModel(env=backend.cli_env(), keep_sessions=0)
        agent = Agent(model)
        with pytest.raises(UsageLimitExceeded, match="input_tokens_limit"):
            await agent.run("x " * 10_000, usage_limits=UsageLimits(input_tokens_limit=2_000))
        assert (await agent.run("short", usage_limits=UsageLimits(input_tokens_limit=2_000))).output == ANSWER


async def test_the_cost_does_not_depend_on_naming_the_model():
    async with OfflineBackend(FunctionModel(answer)) as backend:
        unnamed = ClaudeCodeModel(env=backend.cli_env(), keep_sessions=0)
        named = ClaudeCodeModel(backend.model_name, env=backend.cli_env(), keep_sessions=0)
        first = await Agent(unnamed).run("What does it cost?")
        second = await Agent(named).run("What does it cost?")
        sent = [request.raw["model"] for request in backend.requests]

    assert sent == [backend.model_name, backend.model_name]
    assert first.usage.input_tokens == second.usage.input_tokens
    assert first.usage.cost is not None
    assert first.usage.cost > 0
    assert first.usage.cost == second.usage.cost
