"""pydantic-ai runs the agent's tools: each Claude reply is one model request, through the real CLI."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage, ToolUseBlock
from genai_prices import calc_price
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    AgentRunResult,
    AgentRunResultEvent,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
    ToolOutput,
    UsageLimitExceeded,
    UsageLimits,
)
from pydantic_ai.messages import (
    BinaryContent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.exceptions import ToolValidationError
from claudecode_model.testing import Failure, OfflineBackend
from claudecode_model.toolkit import done_output
from tests._support.agents import square_after_a_retry
from tests._support.brains import tool_returns
from tests._support.requests import texts_after_last_tool_result
from tests._support.responses import details

pytestmark = pytest.mark.cli

SERVER = "mcp__pydantic_tools__"


def responses(messages: list[ModelMessage]) -> int:
    return sum(isinstance(message, ModelResponse) for message in messages)


async def test_a_reply_calling_tools_is_one_model_request_and_pydantic_ai_runs_them(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            calls = [ToolCallPart(SERVER + "add", {"a": 2, "b": 3}), ToolCallPart(SERVER + "add", {"a": 1, "b": 1})]
            return ModelResponse(parts=[TextPart("Let me add."), *calls])
        return ModelResponse(parts=[TextPart("sums: " + ", ".join(str(r.content) for r in tool_returns(messages[-1])))])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)
    ran: list[tuple[int, int]] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    result = await agent.run("add things")

    assert sorted(ran) == [(1, 1), (2, 3)]
    assert result.output.startswith("sums: ")
    assert sorted(result.output.removeprefix("sums: ").split(", ")) == ["2", "5"]
    first, second = claude_backend.requests
    # The reply's calls came back as ordinary tool calls carrying Claude's own tool_use ids ...
    reply = result.all_messages()[1]
    assert isinstance(reply, ModelResponse)
    calls = [part for part in reply.parts if isinstance(part, ToolCallPart)]
    assert [call.tool_name for call in calls] == ["add", "add"]
    assert not any(isinstance(part, NativeToolCallPart) for part in reply.parts)
    assert reply.finish_reason == "tool_call"
    # ... and pydantic-ai's results reached Claude as the results of exactly those calls, in the same CLI turn.
    results = {result.tool_use_id: result for result in second.tool_results()}
    assert set(results) == {call.tool_call_id for call in calls}
    by_id = {call.tool_call_id: call.args_as_dict() for call in calls}
    assert {by_id[key]["a"] + by_id[key]["b"] for key in results} == {5, 2}
    assert all(str(by_id[key]["a"] + by_id[key]["b"]) == value.text for key, value in results.items())
    assert not any(value.is_error for value in results.values())
    assert len(first.tool_results()) == 0
    assert result.usage.requests == 2
    assert result.usage.tool_calls == 2
    assert details(result.all_messages()[-1])["session_id"] == details(reply)["session_id"]


async def test_each_response_of_a_tool_calling_turn_carries_its_own_cost_share(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) < 2:
            return ModelResponse(parts=[ToolCallPart(SERVER + "add", {"a": responses(messages), "b": 1})])
        return ModelResponse(parts=[TextPart("done " * 50)])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    result = await agent.run("add twice")

    replies = [message for message in result.all_messages() if isinstance(message, ModelResponse)]
    assert len(replies) == 3  # one CLI turn: two replies calling tools, then the answer
    costs = [reply.usage.cost for reply in replies]
    assert all(cost is not None and cost > 0 for cost in costs), costs
    for reply in replies[:2]:  # priced from its own tokens, at Anthropic's list price
        listed = calc_price(reply.usage, model_ref=reply.model_name or "", provider_id="anthropic").total_price
        assert reply.usage.cost == round(listed, 10)
    # Together they are what the CLI reported for the turn.
    total = details(replies[-1])["total_cost_usd"]
    assert float(sum(cost for cost in costs if cost is not None)) == pytest.approx(total, rel=1e-6)


async def test_stream_events_show_function_tool_calls_and_results(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "lookup", {"q": "tides"})])
        return ModelResponse(parts=[TextPart(f"found: {tool_returns(messages[-1])[0].content}")])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"{q} at noon"

    events = []
    async with agent.run_stream_events("look it up") as stream:
        async for event in stream:
            events.append(event)

    calls = [event for event in events if isinstance(event, FunctionToolCallEvent)]
    results = [event for event in events if isinstance(event, FunctionToolResultEvent)]
    assert [(event.part.tool_name, event.part.args_as_dict()) for event in calls] == [("lookup", {"q": "tides"})]
    assert [event.part.content for event in results] == ["tides at noon"]
    assert results[0].tool_call_id == calls[0].part.tool_call_id
    assert claude_backend.requests[1].tool_results()[0].tool_use_id == calls[0].part.tool_call_id
    last = events[-1]
    assert isinstance(last, AgentRunResultEvent)
    assert last.result.output == "found: tides at noon"


async def test_model_retry_goes_back_to_claude_as_an_error_result_and_is_corrected(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    result = await square_after_a_retry(model, claude_backend)

    retry = claude_backend.requests[1].tool_results()[-1]
    assert retry.is_error
    assert retry.text == "n must be positive"
    assert claude_backend.requests[2].tool_results()[-1].text == "9"
    assert result.usage.requests == 3
    # All three replies were one CLI turn: one session throughout.
    sessions = {details(m)["session_id"] for m in result.all_messages() if isinstance(m, ModelResponse)}
    assert len(sessions) == 1


async def test_parallel_calls_run_as_pydantic_ai_decides_with_a_sequential_tool_as_a_barrier(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            names = ["slow", "slow", "barrier", "slow"]
            return ModelResponse(parts=[ToolCallPart(SERVER + name, {"tag": str(i)}) for i, name in enumerate(names)])
        return ModelResponse(parts=[TextPart("ok")])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)
    spans: dict[str, tuple[float, float]] = {}

    @agent.tool_plain
    async def slow(tag: str) -> str:
        start = time.monotonic()
        await asyncio.sleep(0.3)
        spans[tag] = (start, time.monotonic())
        return f"slow {tag}"

    @agent.tool_plain(sequential=True)
    async def barrier(tag: str) -> str:
        start = time.monotonic()
        await asyncio.sleep(0.1)
        spans[tag] = (start, time.monotonic())
        return f"barrier {tag}"

    result = await agent.run("go")

    assert result.output == "ok"
    # Calls 0 and 1 overlapped; the sequential call 2 started after both ended and ended before call 3 started.
    assert spans["1"][0] < spans["0"][1]
    assert spans["2"][0] >= max(spans["0"][1], spans["1"][1])
    assert spans["3"][0] >= spans["2"][1]
    texts = sorted(result.text for result in claude_backend.requests[1].tool_results())
    assert texts == ["barrier 2", "slow 0", "slow 1", "slow 3"]
    assert len(claude_backend.requests) == 2


async def test_request_limit_stops_the_run_before_the_excess_api_request(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(SERVER + "again", {})])  # never stops calling

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)
    runs = 0

    @agent.tool_plain
    def again() -> str:
        nonlocal runs
        runs += 1
        return "more"

    with pytest.raises(UsageLimitExceeded, match="request_limit of 2"):
        await agent.run("loop", usage_limits=UsageLimits(request_limit=2))

    assert len(claude_backend.requests) == 2
    assert runs == 2
    await asyncio.sleep(0.5)
    assert len(claude_backend.requests) == 2  # the parked turn was closed, not answered


async def test_text_only_reply_ends_the_run_in_one_request(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain("no tools needed")
    agent = Agent(model)

    @agent.tool_plain
    def unused() -> str:
        return "never"

    result = await agent.run("hi")

    assert result.output == "no tools needed"
    assert result.usage.requests == 1
    assert [type(m) for m in result.all_messages()] == [ModelRequest, ModelResponse]


def approval_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Brain: call ``delete`` once, then report what the tool result said."""
    if responses(messages) == 0:
        return ModelResponse(parts=[TextPart("Deleting."), ToolCallPart(SERVER + "delete", {"path": "/tmp/x"})])
    [result] = tool_returns(messages[-1])
    return ModelResponse(parts=[TextPart(f"tool said: {result.content}")])


ApprovalAgent = Agent[None, str | DeferredToolRequests]


def approval_agent(model: ClaudeCodeModel, deleted: list[str]) -> ApprovalAgent:
    agent: ApprovalAgent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        deleted.append(path)
        return f"deleted {path}"

    return agent


async def run_to_the_approval(
    model: ClaudeCodeModel, backend: OfflineBackend
) -> tuple[ApprovalAgent, list[str], AgentRunResult[str | DeferredToolRequests], ToolCallPart]:
    """Run the approval agent until it asks to approve its ``delete`` call: the agent, the paths deleted so far,
    the first run's result and the call waiting for approval."""
    backend.set_brain(FunctionModel(approval_brain))
    deleted: list[str] = []
    agent = approval_agent(model, deleted)
    first = await agent.run("delete /tmp/x")
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    return agent, deleted, first, request


async def run_on_a_new_model(
    backend: OfflineBackend, deleted: list[str], *args: Any, **kwargs: Any
) -> AgentRunResult[str | DeferredToolRequests]:
    """One run of the approval agent on a model of its own (as in a process of its own), closed afterwards."""
    model = ClaudeCodeModel(env=backend.cli_env())
    try:
        return await approval_agent(model, deleted).run(*args, **kwargs)
    finally:
        await model.aclose()


async def approval_asked_on_a_new_model(
    backend: OfflineBackend,
) -> tuple[list[str], AgentRunResult[str | DeferredToolRequests], ToolCallPart]:
    """Like :func:`run_to_the_approval`, on a model of its own closed afterwards: the paths deleted so far, the
    run's result and the call waiting for approval."""
    backend.set_brain(FunctionModel(approval_brain))
    deleted: list[str] = []
    first = await run_on_a_new_model(backend, deleted, "delete /tmp/x")
    assert isinstance(first.output, DeferredToolRequests)
    [request] = first.output.approvals
    return deleted, first, request


async def test_a_tool_requiring_approval_ends_the_run_with_deferred_tool_requests_and_approval_continues_it(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    agent, deleted, first, request = await run_to_the_approval(model, claude_backend)

    assert (request.tool_name, request.args_as_dict()) == ("delete", {"path": "/tmp/x"})
    assert deleted == []
    assert len(claude_backend.requests) == 1

    results = DeferredToolResults(approvals={request.tool_call_id: True})
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)

    assert second.output == "tool said: deleted /tmp/x"
    assert deleted == ["/tmp/x"]
    assert len(claude_backend.requests) == 2
    [result] = claude_backend.requests[1].tool_results()
    assert (result.tool_use_id, result.text, result.is_error) == (request.tool_call_id, "deleted /tmp/x", False)
    # The same CLI turn went on: Claude saw its call answered, not a new prompt.
    assert [type(part) for part in claude_backend.requests[1].messages[-1].parts] == [ToolReturnPart]
    assert details(first.all_messages()[-1])["session_id"] == details(second.response)["session_id"]
    assert details(first.all_messages()[-1])["session_source"] == "fresh"
    assert details(second.response)["session_source"] == "live"  # the run went on in the kept CLI process


async def test_a_denied_call_reaches_claude_as_the_denial(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent, deleted, first, request = await run_to_the_approval(model, claude_backend)
    denial = ToolDenied("The user keeps /tmp/x.")
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: denial}),
    )

    assert second.output == "tool said: The user keeps /tmp/x."
    assert deleted == []
    [result] = claude_backend.requests[1].tool_results()
    assert (result.tool_use_id, result.text) == (request.tool_call_id, "The user keeps /tmp/x.")


async def test_call_deferred_gets_its_external_result(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "render", {"scene": "cube"})])
        return ModelResponse(parts=[TextPart(f"rendered: {tool_returns(messages[-1])[0].content}")])

    claude_backend.set_brain(FunctionModel(brain))
    agent: Agent[None, str | DeferredToolRequests] = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain
    def render(scene: str) -> str:
        raise CallDeferred(metadata={"queue": "gpu"})

    first = await agent.run("render")
    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.calls
    assert first.output.metadata[call.tool_call_id] == {"queue": "gpu"}

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: "cube.png (1024x1024)"}),
    )

    assert second.output == "rendered: cube.png (1024x1024)"
    [result] = claude_backend.requests[1].tool_results()
    assert (result.tool_use_id, result.text) == (call.tool_call_id, "cube.png (1024x1024)")


async def test_an_approval_continues_on_a_new_model_instance_from_the_history(claude_backend: OfflineBackend):
    # As a process that stopped: the waiting turn is gone.
    deleted, first, request = await approval_asked_on_a_new_model(claude_backend)
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(first.all_messages()))

    second = await run_on_a_new_model(
        claude_backend,
        deleted,
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
    )

    assert second.output == "tool said: deleted /tmp/x"
    assert deleted == ["/tmp/x"]
    assert len(claude_backend.requests) == 2
    resumed = claude_backend.requests[1]
    # Claude saw its own call answered with the approved result (the transcript was replayed in a new session) ...
    assert [(r.tool_use_id, r.text, r.is_error) for r in resumed.tool_results()] == [
        (request.tool_call_id, "deleted /tmp/x", False)
    ]
    [call] = resumed.tool_calls()
    assert (call.tool_call_id, call.args_as_dict()) == (request.tool_call_id, {"path": "/tmp/x"})
    assert resumed.user_texts()[0] == "delete /tmp/x"
    # ... and no trace of the first process's interrupted call.
    assert "interrupted" not in str(resumed.raw["messages"])


async def test_a_denial_continues_on_a_new_model_instance(claude_backend: OfflineBackend):
    deleted, first, request = await approval_asked_on_a_new_model(claude_backend)

    second = await run_on_a_new_model(
        claude_backend,
        deleted,
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: ToolDenied("Not today.")}),
    )

    assert second.output == "tool said: Not today."
    assert deleted == []
    assert [(r.tool_use_id, r.text) for r in claude_backend.requests[1].tool_results()] == [
        (request.tool_call_id, "Not today.")
    ]


async def test_several_pending_calls_continue_on_a_new_model_instance(claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            paths = ["/a", "/b", "/c"]
            return ModelResponse(parts=[ToolCallPart(SERVER + "delete", {"path": path}) for path in paths])
        return ModelResponse(parts=[TextPart("done")])

    claude_backend.set_brain(FunctionModel(brain))
    deleted: list[str] = []
    first = await run_on_a_new_model(claude_backend, deleted, "delete three")
    assert isinstance(first.output, DeferredToolRequests)
    ids = [request.tool_call_id for request in first.output.approvals]
    decisions: dict[str, bool | ToolApproved | ToolDenied] = {ids[0]: True, ids[1]: ToolDenied("keep /b"), ids[2]: True}

    second = await run_on_a_new_model(
        claude_backend,
        deleted,
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals=decisions),
    )

    assert second.output == "done"
    assert sorted(deleted) == ["/a", "/c"]
    results = {r.tool_use_id: r.text for r in claude_backend.requests[-1].tool_results()}
    assert results == {ids[0]: "deleted /a", ids[1]: "keep /b", ids[2]: "deleted /c"}
    assert len(claude_backend.requests) == 2
    # pydantic-ai's answers are in the history already: the new response echoes none of them as a part of its own
    # (a stray part would change the history later requests send, and the session could not be continued).
    new_responses = [message for message in second.new_messages() if isinstance(message, ModelResponse)]
    assert [part.part_kind for message in new_responses for part in message.parts] == ["text"]


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f00f0004850180848a8c210000000049454e44ae426082"
)


async def test_a_tool_returning_an_image_reaches_claude_as_an_image_block(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "snapshot", {})])
        return ModelResponse(parts=[TextPart("seen")])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model)

    @agent.tool_plain
    def snapshot() -> list[object]:
        return ["The screen:", BinaryContent(PNG, media_type="image/png")]

    result = await agent.run("look")

    assert result.output == "seen"
    resumed = claude_backend.requests[1]
    assert resumed.has_image()
    [block] = [
        block
        for message in resumed.raw["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    images = [item for item in block["content"] if item.get("type") == "image"]
    assert [image["source"]["media_type"] for image in images] == ["image/png"]
    assert base64.b64decode(images[0]["source"]["data"]) == PNG
    assert any(item.get("text") == "The screen:" for item in block["content"])


class Verdict(BaseModel):
    score: int
    reason: str


async def test_output_tool_calls_are_validated_by_pydantic_ai_and_a_conversation_goes_on(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        [tool] = info.function_tools
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(tool.name, {"score": "high", "reason": "x"})])
        if responses(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool.name, {"score": 7, "reason": "solid"})])
        return ModelResponse(parts=[ToolCallPart(tool.name, {"score": 8, "reason": f"again: {messages[-1].parts}"})])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=ToolOutput(Verdict, name="verdict"))

    first = await agent.run("rate it")

    assert first.output == Verdict(score=7, reason="solid")
    assert [tool.name for tool in claude_backend.requests[0].tools] == [SERVER + "verdict"]
    retry = claude_backend.requests[1].tool_results()[-1]
    assert retry.is_error
    assert "valid integer" in retry.text
    assert first.usage.requests == 2

    second = await agent.run("and now?", message_history=first.all_messages())

    assert second.output.score == 8
    last = claude_backend.requests[2]
    # The same CLI turn went on: the output call was answered as pydantic-ai answered it, the new prompt came along.
    assert last.tool_results()[-1].text == "Final result processed."
    # The new prompt reached Claude after those results (as a note or a text block: the framing varies by CLI build).
    assert "and now?" in texts_after_last_tool_result(last)


async def test_end_strategy_early_with_done_skips_later_calls_and_says_so(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(
                parts=[
                    ToolCallPart(SERVER + "done", {"message": "all tidy"}),
                    ToolCallPart(SERVER + "sweep", {}),
                ]
            )
        return ModelResponse(parts=[TextPart("next")])

    claude_backend.set_brain(FunctionModel(brain))
    agent = Agent(model, output_type=[str, done_output()], end_strategy="early")
    swept: list[bool] = []

    @agent.tool_plain
    def sweep() -> str:
        swept.append(True)
        return "swept"

    result = await agent.run("tidy up")

    assert result.output == "all tidy"
    assert swept == []
    assert len(claude_backend.requests) == 1
    returns = {part.tool_name: part.content for part in tool_returns(result.all_messages()[-1])}
    assert returns["sweep"] == "Tool not executed - a final result was already processed."

    # A later run in the same conversation: Claude sees the skipped call said so.
    await agent.run("continue", message_history=result.all_messages())
    texts = {r.tool_use_id: r.text for r in claude_backend.requests[1].tool_results()}
    assert sorted(texts.values()) == [
        "Final result processed.",
        "Tool not executed - a final result was already processed.",
    ]


async def test_concurrent_runs_on_one_model_each_get_their_own_results(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = "alpha" if "alpha" in str(messages[0]) else "beta"
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "echo", {"word": prompt})])
        return ModelResponse(parts=[TextPart(f"{prompt} -> {tool_returns(messages[-1])[0].content}")])

    claude_backend.set_brain(FunctionModel(brain))
    agent: Agent[str, str] = Agent(model, deps_type=str)

    @agent.tool
    async def echo(ctx: RunContext[str], word: str) -> str:
        await asyncio.sleep(0.2)
        return f"{word} for {ctx.deps}"

    first, second = await asyncio.gather(agent.run("alpha", deps="run-1"), agent.run("beta", deps="run-2"))

    assert first.output == "alpha -> alpha for run-1"
    assert second.output == "beta -> beta for run-2"
    assert len(claude_backend.requests) == 4


async def test_tool_execution_cli_keeps_tools_inside_claude_codes_loop(claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "add", {"a": 1, "b": 2})])
        return ModelResponse(parts=[TextPart(f"= {tool_returns(messages[-1])[0].content}")])

    claude_backend.set_brain(FunctionModel(brain))
    for model in (
        ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution="cli"),
        ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_tool_execution": "cli"}),
    ):
        agent = Agent(model)

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            return a + b

        try:
            result = await agent.run("add")
        finally:
            await model.aclose()
        assert result.output == "= 3"
        assert result.usage.requests == 1  # the whole CLI turn was one model request
        [response] = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
        assert [type(part) for part in response.parts if "Tool" in type(part).__name__] == [
            NativeToolCallPart,
            NativeToolReturnPart,
        ]


def test_an_unknown_tool_execution_is_refused_before_any_work():
    with pytest.raises(ToolValidationError, match="Unknown tool execution 'both'"):
        ClaudeCodeModel(tool_execution="both")  # type: ignore[arg-type]  # a value outside the type, on purpose


async def test_agent_run_over_the_stdio_bridge_with_an_image(claude_backend: OfflineBackend):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            return ModelResponse(parts=[ToolCallPart(SERVER + "snapshot", {"label": "x"})])
        return ModelResponse(parts=[TextPart(f"seen: {tool_returns(messages[-1])[0].content}")])

    claude_backend.set_brain(FunctionModel(brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_transport="stdio")
    agent = Agent(model)

    @agent.tool_plain
    def snapshot(label: str) -> list[object]:
        return [f"screen {label}", BinaryContent(PNG, media_type="image/png")]

    try:
        result = await agent.run("look")
    finally:
        await model.aclose()

    assert result.output.startswith("seen: ")
    assert result.usage.requests == 2
    assert claude_backend.requests[1].has_image()
    assert claude_backend.requests[1].tool_results()[0].text.startswith("screen x")


async def test_a_reply_mixing_a_builtin_tool_and_an_agent_tool(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tmp_path: Path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the key is under the mat\n")

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            read = ToolCallPart("Read", {"file_path": str(notes)})
            return ModelResponse(parts=[read, ToolCallPart(SERVER + "lookup", {"q": "door"})])
        texts = sorted(str(part.content)[:40] for part in tool_returns(messages[-1]))
        return ModelResponse(parts=[TextPart(" | ".join(texts))])

    claude_backend.set_brain(FunctionModel(brain))
    settings: ClaudeCodeModelSettings = {"claude_code_builtin_tools": ["Read"], "claude_code_cwd": tmp_path}
    agent = Agent(model, model_settings=settings)

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"the {q} is locked"

    result = await agent.run("open up")

    assert "the door is locked" in result.output
    assert "the key is under the mat" in result.output
    first = result.all_messages()[1]
    assert isinstance(first, ModelResponse)
    assert [type(part).__name__ for part in first.parts if "Call" in type(part).__name__] == [
        "NativeToolCallPart",
        "ToolCallPart",
    ]
    returns = [part for m in result.all_messages() for part in m.parts if isinstance(part, NativeToolReturnPart)]
    assert [part.tool_name for part in returns] == ["Read"]
    assert len(claude_backend.requests) == 2


async def test_stream_messages_ends_at_a_reply_calling_agent_tools(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain([ModelResponse(parts=[ToolCallPart(SERVER + "lookup", {"q": "x"})]), "never asked"])
    tool = ToolDefinition(
        name="lookup", parameters_json_schema={"type": "object", "properties": {"q": {"type": "string"}}}
    )
    params = ModelRequestParameters(function_tools=[tool], allow_text_output=True)

    raw = [message async for message in model.stream_messages([ModelRequest.user_text_prompt("go")], None, params)]

    calls = [block for message in raw if isinstance(message, AssistantMessage) for block in message.content]
    assert [(block.name, block.input) for block in calls if isinstance(block, ToolUseBlock)] == [
        (SERVER + "lookup", {"q": "x"})
    ]
    assert not any(isinstance(message, ResultMessage) for message in raw)  # the turn waits for the result
    assert len(claude_backend.requests) == 1


async def test_a_reply_retried_without_streaming_after_a_cut_still_hands_its_calls_to_pydantic_ai(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    call = ModelResponse(parts=[TextPart("Checking the sum now."), ToolCallPart(SERVER + "add", {"a": 1, "b": 2})])
    claude_backend.set_brain([Failure.cut(call, after_deltas=2), call, "the sum is 3"])
    agent = Agent(model, model_settings=ClaudeCodeModelSettings({"claude_code_timeout": 60}))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    result = await agent.run("add")

    assert result.output == "the sum is 3"
    # The CLI retries the cut request, usually without streaming (then no message_stop ends the reply: the turn
    # sees its calls waiting instead).
    assert len(claude_backend.requests) == 3
    assert claude_backend.requests[0].stream
    [answer] = claude_backend.requests[2].tool_results()
    assert answer.text == "3"
    reply = result.all_messages()[1]
    assert isinstance(reply, ModelResponse)
    assert [type(part) for part in reply.parts] == [TextPart, ToolCallPart]
