"""The offline backend's prompt cache through the real CLI: a conversation resumed from a session store on another
worker reads its history from the cache; the same history replayed misses it and pays for writing it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, SQLiteSessionStore
from claudecode_model.testing import OfflineBackend, PromptCache
from claudecode_model.testing._sse import estimate_tokens, request_text

pytestmark = pytest.mark.cli


def echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    return ModelResponse(parts=[TextPart(f"echo: {prompts[-1]} ({len(prompts)} prompts)")])


def last_response(messages: list[ModelMessage]) -> ModelResponse:
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    return response


def cli_usage(response: ModelResponse) -> dict[str, Any]:
    """What the CLI itself reported for the turn's model: token counts and the cost it computed from them."""
    (usage,) = (response.provider_details or {})["model_usage"].values()
    assert isinstance(usage, dict)
    return usage


async def test_a_live_session_reads_its_earlier_turns_from_the_cache():
    async with OfflineBackend(FunctionModel(echo), prompt_cache=PromptCache(min_tokens=0)) as backend:
        model = ClaudeCodeModel(env=backend.cli_env())
        agent = Agent(model)
        try:
            first = await agent.run("one")
            second = await agent.run("two", message_history=first.all_messages())
        finally:
            await model.aclose()
        requests = backend.requests

    assert first.usage.cache_read_tokens == 0  # a cold cache
    assert first.usage.cache_write_tokens == estimate_tokens(request_text(requests[0].raw))
    assert second.usage.cache_read_tokens == estimate_tokens(request_text(requests[0].raw))
    assert 0 < second.usage.cache_write_tokens < second.usage.cache_read_tokens


async def test_a_session_resumed_from_the_store_hits_the_cache_a_replay_misses_it(tmp_path: Path):
    cache = PromptCache(min_tokens=0)
    async with OfflineBackend(FunctionModel(echo), prompt_cache=cache) as backend:

        def worker(name: str, store: SQLiteSessionStore | None) -> ClaudeCodeModel:
            config_dir = tmp_path / name
            config_dir.mkdir()
            return ClaudeCodeModel(env=backend.cli_env(config_dir=config_dir), session_store=store)

        async with SQLiteSessionStore(tmp_path / "sessions.db") as store:
            worker_a = worker("a", store)
            agent_a = Agent(worker_a)
            messages: list[ModelMessage] | None = None
            try:
                for turn in range(4):
                    result = await agent_a.run(f"turn {turn} " + "words " * 50, message_history=messages)
                    messages = result.all_messages()
            finally:
                await worker_a.aclose()
            assert messages is not None
            last_of_a = backend.last_request.raw

            turns: dict[str, list[ModelMessage]] = {}
            for way, with_store in (("resume", store), ("replay", None)):
                model = worker(way, with_store)
                settings: Any = {} if with_store else {"claude_code_session": "new"}
                try:
                    result = await Agent(model).run("next", message_history=messages, model_settings=settings)
                finally:
                    await model.aclose()
                turns[way] = result.all_messages()

    resumed, replayed = last_response(turns["resume"]), last_response(turns["replay"])
    assert resumed.provider_details is not None
    assert replayed.provider_details is not None
    session_of_a = (last_response(messages).provider_details or {})["session_id"]
    assert resumed.provider_details["session_id"] == session_of_a
    assert replayed.provider_details["session_id"] != resumed.provider_details["session_id"]
    assert TextPart("echo: next (5 prompts)") in resumed.parts
    assert TextPart("echo: next (5 prompts)") in replayed.parts

    # The resumed request starts with worker A's last request, byte for byte: all of it is read from the cache.
    assert resumed.usage.cache_read_tokens == estimate_tokens(request_text(last_of_a))
    # The replayed one differs from the first message on: only the tools and the system prompt are a hit.
    system_prefix = estimate_tokens(request_text({**last_of_a, "messages": []}))
    assert replayed.usage.cache_read_tokens == system_prefix
    assert replayed.usage.cache_write_tokens > resumed.usage.cache_read_tokens

    # The CLI priced the split itself (reads far below writes): its cost is our response's cost.
    for response in (resumed, replayed):
        reported = cli_usage(response)
        assert reported["cacheReadInputTokens"] == response.usage.cache_read_tokens
        assert reported["cacheCreationInputTokens"] == response.usage.cache_write_tokens
        details = response.provider_details or {}
        assert float(response.usage.cost or 0) == pytest.approx(details["total_cost_usd"]) == reported["costUSD"]
    assert resumed.usage.cost is not None
    assert replayed.usage.cost is not None
    assert resumed.usage.cost < replayed.usage.cost / 2
