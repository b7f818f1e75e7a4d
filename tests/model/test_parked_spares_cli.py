"""Parked spares through the real CLI and the offline backend: what the API receives after a claim is what it receives
from a new process of the same session, and the CLI's refusal of a claim (the model's own logic is tested on the
in-memory CLI, ``test_parked_spares.py``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model._process.binary import find_cli
from claudecode_model._sessions.claim import PARK_ARGUMENT, ClaimRefusedError, SessionClaim
from claudecode_model._sessions.session import CLISession
from claudecode_model.testing import OfflineBackend
from claudecode_model.testing._request import RecordedRequest
from tests._support.responses import session_of, source_of

pytestmark = pytest.mark.cli


def tool_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the first offered tool once, then answer with what it returned."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f"tool said {returns[0].content}")])
    if not info.function_tools:
        return ModelResponse(parts=[TextPart("no tools")])
    return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])


def _agent(model: ClaudeCodeModel, instructions: str, tool: str) -> Agent[None, str]:
    agent = Agent(model, instructions=instructions)

    def answer(city: str = "Paris") -> str:
        """Answer for a city."""
        return f"{tool} in {city}"

    agent.tool_plain(name=tool)(answer)
    return agent


def _seen(request: RecordedRequest) -> tuple[str, str | None, list[tuple[str, str | None, dict[str, Any]]]]:
    """What a user set, as the API receives it: the system prompt, the model, the tools offered."""
    tools = [(tool.name, tool.description, tool.parameters_json_schema) for tool in request.tools]
    return request.system, request.model, tools


_IDS = re.compile(r"toolu_\w+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _body(request: RecordedRequest) -> str:
    """The whole request body but what names one session or call (its metadata, tool call ids)."""
    return _IDS.sub("<id>", json.dumps({key: value for key, value in request.raw.items() if key != "metadata"}))


async def test_a_claimed_parked_cli_sends_the_api_what_a_new_process_of_the_session_sends(
    claude_backend: OfflineBackend,
) -> None:
    claude_backend.set_brain(FunctionModel(tool_then_text))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=1)
    try:
        await _agent(model, "Be brief.", "weather").run("x")
        await _agent(model, "Be verbose.", "weather").run("x")  # two signatures, one launch: the next spare parks
        claimed_from = len(claude_backend.requests)
        claimed = await _agent(model, "Answer in French.", "forecast").run("x")
    finally:
        await model.aclose()
    assert source_of(claimed) == "spare"
    assert claimed.output == "tool said forecast in Paris"

    new_process = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        fresh_from = len(claude_backend.requests)
        fresh = await _agent(new_process, "Answer in French.", "forecast").run("x")
    finally:
        await new_process.aclose()
    assert source_of(fresh) == "fresh"

    claimed_requests = claude_backend.requests[claimed_from:fresh_from]
    fresh_requests = claude_backend.requests[fresh_from:]
    assert len(claimed_requests) == len(fresh_requests) == 2
    for after_claim, from_new_process in zip(claimed_requests, fresh_requests, strict=True):
        assert _seen(after_claim) == _seen(from_new_process)
        assert _body(after_claim) == _body(from_new_process)
    assert "Answer in French." in claimed_requests[0].system
    assert [tool.name for tool in claimed_requests[0].tools] == ["mcp__pydantic_tools__forecast"]


async def _fresh_requests(
    backend: OfflineBackend, agent_of: Callable[[ClaudeCodeModel], Agent[None, str]]
) -> list[str]:
    """The request bodies a new process sends for ``agent_of``'s run on a model with no spares."""
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    start = len(backend.requests)
    try:
        result = await agent_of(model).run("x")
    finally:
        await model.aclose()
    assert source_of(result) == "fresh"
    return [_body(request) for request in backend.requests[start:]]


async def test_tool_and_text_agents_share_a_parked_cli_and_each_claim_sends_what_a_new_process_sends(
    claude_backend: OfflineBackend,
) -> None:
    """A text agent's launch and a tool agent's differ only in what the claim gives (the tool server, the allow
    rule of its tools): the spare one of them parked serves the other."""
    claude_backend.set_brain(FunctionModel(tool_then_text))

    def text_agent(model: ClaudeCodeModel) -> Agent[None, str]:
        return Agent(model, instructions="Answer plainly.")

    def tool_agent(model: ClaudeCodeModel) -> Agent[None, str]:
        return _agent(model, "Use the tool.", "forecast")

    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=1)
    try:
        await _agent(model, "Be brief.", "weather").run("x")
        await Agent(model, instructions="Be verbose.").run("x")  # a text agent: the spare it leaves is parked
        start = len(claude_backend.requests)
        tools_claimed = await tool_agent(model).run("x")  # claims a CLI a text agent launched
        tools_bodies = [_body(request) for request in claude_backend.requests[start:]]
        start = len(claude_backend.requests)
        text_claimed = await text_agent(model).run("x")  # claims a CLI a tool agent launched
        text_bodies = [_body(request) for request in claude_backend.requests[start:]]
    finally:
        await model.aclose()

    assert (source_of(tools_claimed), source_of(text_claimed)) == ("spare", "spare")
    assert tools_claimed.output == "tool said forecast in Paris"
    assert text_claimed.output == "no tools"
    assert tools_bodies == await _fresh_requests(claude_backend, tool_agent)
    assert text_bodies == await _fresh_requests(claude_backend, text_agent)


async def test_a_session_claimed_in_another_directory_is_resumed_from_there(
    claude_backend: OfflineBackend, tmp_path: Path
) -> None:
    """The claim moves the CLI to the session's working directory as if it had started there: the transcript is
    where a later process of the conversation looks for it."""
    claude_backend.set_brain(FunctionModel(tool_then_text))
    elsewhere = ClaudeCodeModelSettings(claude_code_cwd=str(tmp_path))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=1)
    try:
        await _agent(model, "Be brief.", "weather").run("x")
        await _agent(model, "Be verbose.", "weather").run("x")
        claimed = await _agent(model, "Be exact.", "weather").run("x", model_settings=elsewhere)
    finally:
        await model.aclose()
    assert source_of(claimed) == "spare"

    later = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        resumed = await _agent(later, "Be exact.", "weather").run(
            "y", message_history=claimed.all_messages(), model_settings=elsewhere
        )
    finally:
        await later.aclose()
    assert source_of(resumed) == "resume"
    assert session_of(resumed) == session_of(claimed)


async def test_the_cli_refuses_a_claim_it_cannot_take_and_a_model_it_is_given_reaches_the_api(
    claude_backend: OfflineBackend, tmp_path: Path
) -> None:
    claude_backend.set_brain(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")])))
    options = ClaudeAgentOptions(
        cli_path=find_cli(),
        env=claude_backend.cli_env(),
        tools=[],
        setting_sources=[],
        model="claude-launched",
        extra_args={PARK_ARGUMENT: None},
    )
    session = CLISession(options, signature="launch")
    await session.start()
    try:
        missing = SessionClaim(
            cwd=str(tmp_path / "gone"), system_prompt="s", permission_mode=None, model=None, sdk_servers={}
        )
        with pytest.raises(ClaimRefusedError, match="cwd_not_found"):
            await session.claim(missing, signature="claimed")
        claim = SessionClaim(
            cwd=str(tmp_path),
            system_prompt="Be brief.",
            permission_mode="default",
            model="claude-claimed",
            sdk_servers={},
        )
        await session.claim(claim, signature="claimed")  # a refused claim leaves the CLI parked
        async for _ in session.run_turn(
            {"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None}
        ):
            pass
    finally:
        await session.close()
    assert claude_backend.requests[-1].model == "claude-claimed"
    assert claude_backend.requests[-1].system.endswith("Be brief.")
