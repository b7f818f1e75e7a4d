"""pydantic-ai's ``TemporalDurability`` around agents on Claude Code: the real CLI against the offline backend, a real
Temporal dev server, the worker in the test process.

Each model request is an activity, and so is each tool call pydantic-ai runs; a request that lands where the parked
CLI turn is gone continues from the session store, or replays the history.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import RunContext

from claudecode_model import ClaudeCodeModel, ClaudeCodeModels, SQLiteSessionStore
from tests._support.brains import weather_brain
from tests._support.temporal_runs import RunRequest, activity_names, run_workflow, running_worker

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator

    from temporalio.client import Client

    from claudecode_model.testing import OfflineBackend
    from tests._support.temporal import TemporalDevServer

pytestmark = pytest.mark.cli

CLI_CONTINUATION_PROMPT = "Continue from where you left off."
"""What the CLI sends when it resumes a session whose transcript ends with a tool result."""


@pytest.fixture
async def temporal_client(temporal_server: TemporalDevServer) -> Client:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client

    from claudecode_model.temporal import ClaudeCodePlugin

    return await Client.connect(temporal_server.address, plugins=[PydanticAIPlugin(), ClaudeCodePlugin()])


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    made = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    yield made
    await made.aclose()


def _details(response: ModelMessage) -> dict[str, Any]:
    assert isinstance(response, ModelResponse)
    return dict(response.provider_details or {})


async def test_model_requests_and_tool_calls_are_activities(
    claude_backend: OfflineBackend, model: ClaudeCodeModel, temporal_client: Client
):
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    claude_backend.set_brain(FunctionModel(weather_brain))
    calls: list[str] = []
    agent = Agent(model, name="weather_agent", capabilities=[TemporalDurability()])

    @agent.tool_plain
    async def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    async with running_worker(temporal_client, agent) as queue:
        outcome, workflow_id = await run_workflow(temporal_client, queue, RunRequest("weather_agent", "Weather?"))
        activities = await activity_names(temporal_client, workflow_id)

    assert outcome.output == "The weather: sunny in Paris"
    assert calls == ["Paris"]
    requests = [name for name in activities if name.endswith("__model_request")]
    tool_calls = [name for name in activities if name.endswith("__call_tool")]
    assert len(requests) == 2, activities
    assert len(tool_calls) == 1, activities
    # The second request continued the CLI turn that the first one parked for the tool result.
    assert len(claude_backend.requests) == 2
    assert claude_backend.requests[-1].tool_results()[0].text == "sunny in Paris"


async def test_settings_of_the_model_and_the_run_reach_the_cli_in_the_activity(
    claude_backend: OfflineBackend, temporal_client: Client
):
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    model = ClaudeCodeModel(
        env=claude_backend.cli_env(),
        spare_sessions=0,
        settings={"claude_code_system_prompt_append": "Model default: answer in French."},
    )
    agent = Agent(model, name="settings_agent", instructions="Be brief.", capabilities=[TemporalDurability()])
    try:
        async with running_worker(temporal_client, agent) as queue:
            request = RunRequest(
                "settings_agent", "Hello", model_settings={"claude_code_system_prompt_append": "Run setting: rhyme."}
            )
            outcome, _ = await run_workflow(temporal_client, queue, request)
    finally:
        await model.aclose()

    assert outcome.output
    [received] = claude_backend.requests
    assert "Be brief." in received.system
    assert "Run setting: rhyme." in received.system  # the run's setting wins over the model's default
    assert "Model default" not in received.system


async def test_settings_that_cannot_cross_into_an_activity_fail_the_run_with_a_clear_error(
    claude_backend: OfflineBackend, temporal_client: Client
):
    """A predicate in the settings cannot be serialised into the activity: the workflow fails (it is not retried
    forever), with pydantic-ai's error naming the cause, before any CLI is started."""
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from temporalio.client import WorkflowFailureError

    model = ClaudeCodeModel(
        env=claude_backend.cli_env(),
        spare_sessions=0,
        settings={"claude_code_tool_parameter_restrictions": {"weather": {"city": lambda city: city == "Paris"}}},
    )
    agent = Agent(model, name="predicate_agent", capabilities=[TemporalDurability()])
    try:
        async with running_worker(temporal_client, agent) as queue:
            with pytest.raises(WorkflowFailureError) as failed:
                await run_workflow(temporal_client, queue, RunRequest("predicate_agent", "Weather?"))
    finally:
        await model.aclose()

    assert "failed to be serialized" in str(failed.value.cause)
    assert claude_backend.requests == []


async def test_claude_code_strings_with_approvals_and_streamed_events(
    claude_backend: OfflineBackend, temporal_client: Client
):
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    claude_backend.set_brain(FunctionModel(weather_brain))
    calls: list[str] = []
    texts: list[str] = []

    async def handle_events(ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for event in events:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                texts.append(event.part.content)
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                texts.append(event.delta.content_delta)

    models = ClaudeCodeModels(env=claude_backend.cli_env())
    agent = Agent(
        "claude-code:sonnet",
        name="approval_agent",
        output_type=[str, DeferredToolRequests],
        capabilities=[models, TemporalDurability(event_stream_handler=handle_events)],
    )

    @agent.tool_plain(requires_approval=True)
    async def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    try:
        async with running_worker(temporal_client, agent) as queue:
            asked, _ = await run_workflow(temporal_client, queue, RunRequest("approval_agent", "Weather?"))
            assert asked.output is None
            assert calls == []  # waiting for the approval
            request = RunRequest("approval_agent", None, history=asked.messages, approve=asked.approvals)
            answered, workflow_id = await run_workflow(temporal_client, queue, request)
            activities = await activity_names(temporal_client, workflow_id)
    finally:
        await models.aclose()

    assert answered.output == "The weather: sunny in Paris"
    assert calls == ["Paris"]
    assert any(name.endswith("__model_request_stream") for name in activities), activities
    assert len(texts) > 1  # streamed in pieces, from inside the activity
    assert "".join(texts) == "The weather: sunny in Paris"
    # The approved call's result went to the turn the first run parked: same session, no second CLI conversation.
    history = answered.history()
    assert _details(history[-1])["session_id"] == _details(asked.history()[-1])["session_id"]
    assert [request.last_user_text() for request in claude_backend.requests] == ["Weather?", "Weather?"]


async def test_claude_code_strings_with_a_session_store_continue_on_another_worker(
    claude_backend: OfflineBackend, temporal_client: Client, tmp_path: Path
):
    """``ClaudeCodeModels(session_store=...)``: a follow-up on a worker whose models never saw the session resumes it
    from the store."""
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    claude_backend.set_brain(FunctionModel(weather_brain))
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    first = ClaudeCodeModels(env=claude_backend.cli_env(), session_store=store)
    second = ClaudeCodeModels(env=claude_backend.cli_env(config_dir=tmp_path / "other-worker"), session_store=store)

    async def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    agents = [
        Agent("claude-code:sonnet", name=name, tools=[weather], capabilities=[models, TemporalDurability()])
        for name, models in (("store_agent", first), ("store_follow_up_agent", second))
    ]
    try:
        async with running_worker(temporal_client, agents[0]) as queue:
            asked, _ = await run_workflow(temporal_client, queue, RunRequest("store_agent", "Weather?"))
        await first.aclose()  # the first worker is gone
        async with running_worker(temporal_client, agents[1]) as queue:
            request = RunRequest("store_follow_up_agent", "And tomorrow?", history=asked.messages)
            followed, _ = await run_workflow(temporal_client, queue, request)
    finally:
        await first.aclose()
        await second.aclose()
        await store.aclose()

    assert asked.output == "The weather: sunny in Paris"
    last = _details(followed.history()[-1])
    assert last["session_source"] == "resume"
    assert last["session_id"] == _details(asked.history()[-1])["session_id"]


class _WatchedStore(SQLiteSessionStore):
    """A SQLite store that notes the ids of the tool calls whose transcript entries reached it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.tool_calls: set[str] = set()

    async def append(self, key: Any, entries: list[Any]) -> None:
        await super().append(key, entries)
        for entry in entries:
            content = (entry.get("message") or {}).get("content") if isinstance(entry, dict) else None
            if isinstance(content, list):
                self.tool_calls |= {block["id"] for block in content if block.get("type") == "tool_use"}

    async def holds_call(self, tool_call_id: str) -> None:
        for _ in range(200):
            if tool_call_id in self.tool_calls:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the store never got the reply that made tool call {tool_call_id}")


@pytest.mark.parametrize("with_store", [False, True], ids=["replay", "store"])
async def test_a_request_where_the_parked_turn_is_gone_continues_without_running_the_tool_again(
    claude_backend: OfflineBackend, temporal_client: Client, tmp_path: Path, with_store: bool
):
    """The tool closes the model's CLI processes, as if its result went to a worker that never saw the turn: the
    next request replays the history, with pydantic-ai's recorded result for the call. A follow-up run on another
    worker (a new model, another config dir) then resumes the session from the store, or replays without one."""
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    claude_backend.set_brain(FunctionModel(weather_brain))
    store = _WatchedStore(tmp_path / "sessions.db") if with_store else None
    first = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, session_store=store)
    other_env = claude_backend.cli_env(config_dir=tmp_path / "other-worker")
    second = ClaudeCodeModel(env=other_env, spare_sessions=0, session_store=store)
    calls: list[str] = []
    agent: Agent[None, str] = Agent(first, name="lost_turn_agent", capabilities=[TemporalDurability()])
    follow_up_agent: Agent[None, str] = Agent(second, name="follow_up_agent", capabilities=[TemporalDurability()])

    async def weather(ctx: RunContext[None], city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        if store is not None:  # the store has the reply that made this call (the CLI sends it as it writes it)
            await store.holds_call(ctx.tool_call_id or "")
        await first.aclose()  # the parked turn and its CLI are gone
        return f"sunny in {city}"

    agent.tool(weather)
    follow_up_agent.tool(weather)
    try:
        async with running_worker(temporal_client, agent) as queue:
            outcome, _ = await run_workflow(temporal_client, queue, RunRequest("lost_turn_agent", "Weather?"))
        await first.aclose()  # the first worker is gone
        async with running_worker(temporal_client, follow_up_agent) as queue:
            request = RunRequest("follow_up_agent", "And tomorrow?", history=outcome.messages)
            followed, _ = await run_workflow(temporal_client, queue, request)
    finally:
        await first.aclose()
        await second.aclose()
        if store is not None:
            await store.aclose()

    assert outcome.output == "The weather: sunny in Paris"
    assert calls == ["Paris"]
    history = outcome.history()
    # With the store: the session's own transcript, branched at the reply that made the call; without: the history.
    assert _details(history[-1])["session_source"] == ("fork" if with_store else "replay")
    answered = claude_backend.requests[-2]
    assert [result.text for result in answered.tool_results()] == ["sunny in Paris"]  # pydantic-ai's result, once
    follow_up = _details(followed.history()[-1])
    assert follow_up["session_source"] == ("resume" if with_store else "replay")
    if with_store:
        assert follow_up["session_id"] == _details(history[-1])["session_id"]
    prompts = [text for text in claude_backend.requests[-1].user_texts() if text != CLI_CONTINUATION_PROMPT]
    assert prompts == ["Weather?", "And tomorrow?"]
