"""Runs served through pydantic-ai's Vercel AI and AG-UI adapters, read by the official npm clients under Node.

The agent runs on ClaudeCodeModel through the real CLI and the offline backend; the streams go over HTTP on
127.0.0.1 to the `ai` package's UI message stream reader and to `@ag-ui/client`, which validate what they read.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.capabilities import WebSearch
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend
from tests._support.brains import system_text, tool_returns

pytestmark = pytest.mark.cli

SUBAGENT_PROMPT = "You are the note reader. Read the notes you are given and report what they say."
TOOL = "mcp__pydantic_tools__"
NOTES_TEXT = "the treasure is under the oak"


def brain_for(notes: Path):
    """Claude, by the prompt: answer; call the agent's tool; search the web; start a subagent; ask for approval."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if [tool.name for tool in info.function_tools] == ["web_search"]:  # the API's own web search
            results = [{"type": "web_search_result", "url": "https://ai.pydantic.dev/", "title": "Pydantic AI"}]
            return ModelResponse(
                parts=[
                    NativeToolCallPart("web_search", {"query": "pydantic ai"}, tool_call_id="s1"),
                    NativeToolReturnPart("web_search", results, tool_call_id="s1"),
                    TextPart("An agent framework."),
                ]
            )
        if SUBAGENT_PROMPT in system_text(messages):
            if not returns:
                return ModelResponse(parts=[ToolCallPart("Read", {"file_path": str(notes)})])
            return ModelResponse(parts=[TextPart(f"REPORT: {returns[0].content}")])
        if returns:
            return ModelResponse(parts=[TextPart(f"Done: {returns[0].content}")])
        prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        prompt = str(prompts[-1]) if prompts else ""
        if "lookup" in prompt:
            return ModelResponse(parts=[TextPart("Looking it up."), ToolCallPart(f"{TOOL}lookup", {"key": "colour"})])
        if "search" in prompt:
            return ModelResponse(parts=[ToolCallPart("WebSearch", {"query": "pydantic ai"})])
        if "subagent" in prompt:
            task = {"description": "Read notes", "prompt": f"Read {notes}", "subagent_type": "note-reader"}
            return ModelResponse(parts=[ToolCallPart("Agent", task)])
        if "delete" in prompt:
            return ModelResponse(parts=[ToolCallPart(f"{TOOL}delete_file", {"path": "/tmp/x"})])
        return ModelResponse(parts=[TextPart("Hello from Claude Code.")])

    return brain


@pytest.fixture
async def served(
    claude_backend: OfflineBackend, tmp_path: Path, serve_app: Callable[[Any], Any]
) -> AsyncIterator[tuple[str, OfflineBackend]]:
    notes = tmp_path / "notes.txt"
    notes.write_text(f"{NOTES_TEXT}\n")
    claude_backend.set_brain(FunctionModel(brain_for(notes)))
    model = ClaudeCodeModel(env=claude_backend.cli_env())
    agent = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        capabilities=[WebSearch()],
        model_settings=ClaudeCodeModelSettings(
            {
                "claude_code_cwd": tmp_path,
                "claude_code_agents": {
                    "note-reader": {"description": "Reads notes", "prompt": SUBAGENT_PROMPT, "tools": ["Read"]}
                },
            }
        ),
    )

    @agent.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key} is teal"

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (needs the user's approval)."""
        return f"deleted {path}"

    async def vercel(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent, sdk_version=6)

    async def ag_ui(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    app = Starlette(routes=[Route("/vercel", vercel, methods=["POST"]), Route("/ag-ui", ag_ui, methods=["POST"])])
    try:
        async with serve_app(app) as url:
            yield url, claude_backend
    finally:
        await model.aclose()


# --- the `ai` package (Vercel AI SDK 6 UI message stream) ------------------------------------------------------


def _tool_parts(message: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [
        part for part in message["parts"] if part["type"] in (f"tool-{name}", "dynamic-tool") and _named(part, name)
    ]


def _named(part: dict[str, Any], name: str) -> bool:
    return part["type"] == f"tool-{name}" or part.get("toolName") == name


def _texts(message: dict[str, Any]) -> str:
    return "".join(part["text"] for part in message["parts"] if part["type"] == "text")


async def read_from(served: tuple[str, OfflineBackend], read_stream: Any, protocol: str, prompt: str) -> Any:
    """What the ``protocol`` client (``"vercel"`` or ``"ag-ui"``) read from the served app's endpoint for it."""
    url, _ = served
    return await read_stream(protocol, f"{url}/{protocol}", prompt)


async def test_vercel_client_reads_text(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "vercel", "say hello")

    message = read["message"]
    assert message["role"] == "assistant"
    assert _texts(message) == "Hello from Claude Code."
    assert read["chunkTypes"][0] == "start"
    assert read["chunkTypes"][-1] == "finish"


async def test_vercel_client_reads_an_agent_tool_call_with_its_result(
    served: tuple[str, OfflineBackend], read_stream: Any
):
    read = await read_from(served, read_stream, "vercel", "lookup the colour")

    message = read["message"]
    [call] = _tool_parts(message, "lookup")
    assert call["state"] == "output-available"
    assert call["input"] == {"key": "colour"}
    assert "colour is teal" in json.dumps(call["output"])
    assert "Done: " in _texts(message)


async def test_vercel_client_reads_a_builtin_web_search(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "vercel", "search the web")

    [call] = _tool_parts(read["message"], "web_search")
    assert call["providerExecuted"] is True
    assert call["state"] == "output-available"
    assert call["input"] == {"query": "pydantic ai"}
    assert "https://ai.pydantic.dev/" in json.dumps(call["output"])


async def test_vercel_client_reads_a_subagent_linked_to_its_parent(
    served: tuple[str, OfflineBackend], read_stream: Any
):
    read = await read_from(served, read_stream, "vercel", "ask the subagent")

    message = read["message"]
    [agent_call] = _tool_parts(message, "Agent")
    [read_call] = _tool_parts(message, "Read")
    assert agent_call["state"] == read_call["state"] == "output-available"
    assert agent_call["providerExecuted"] is True
    assert NOTES_TEXT in json.dumps(read_call["output"])
    assert "REPORT:" in json.dumps(agent_call["output"])
    details = read_call["callProviderMetadata"]["pydantic_ai"]["provider_details"]
    assert details["parent_tool_call_id"] == agent_call["toolCallId"]
    order = [part.get("toolCallId") for part in message["parts"] if part["type"].startswith("tool-")]
    assert order == [agent_call["toolCallId"], read_call["toolCallId"]]


async def test_vercel_client_reads_an_approval_request(served: tuple[str, OfflineBackend], read_stream: Any):
    url, backend = served

    read = await read_stream("vercel", f"{url}/vercel", "delete the file")

    [call] = _tool_parts(read["message"], "delete_file")
    assert call["state"] == "approval-requested", call
    assert call["input"] == {"path": "/tmp/x"}
    assert "approval" in call
    assert not backend.last_request.tool_results(), "the tool must not have run"


# --- @ag-ui/client ----------------------------------------------------------------------------------------------


def _event_types(read: dict[str, Any]) -> list[str]:
    return [event["type"] for event in read["events"]]


def _assistant_tool_calls(read: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        call
        for message in read["messages"]
        if message["role"] == "assistant"
        for call in message.get("toolCalls") or []
    ]


def _tool_messages(read: dict[str, Any]) -> dict[str, str]:
    return {message["toolCallId"]: message["content"] for message in read["messages"] if message["role"] == "tool"}


async def test_ag_ui_client_reads_text(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "ag-ui", "say hello")

    types = _event_types(read)
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_CONTENT" in types
    [answer] = [m for m in read["messages"] if m["role"] == "assistant"]
    assert answer["content"] == "Hello from Claude Code."
    assert read["finished"]["outcome"] == "success"


async def test_ag_ui_client_reads_an_agent_tool_call_with_its_result(
    served: tuple[str, OfflineBackend], read_stream: Any
):
    read = await read_from(served, read_stream, "ag-ui", "lookup the colour")

    [call] = [call for call in _assistant_tool_calls(read) if call["function"]["name"] == "lookup"]
    assert json.loads(call["function"]["arguments"]) == {"key": "colour"}
    assert "colour is teal" in _tool_messages(read)[call["id"]]
    assert read["finished"]["pendingToolCallIds"] == []


async def test_ag_ui_client_reads_a_builtin_web_search(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "ag-ui", "search the web")

    [call] = [call for call in _assistant_tool_calls(read) if call["function"]["name"] == "web_search"]
    assert json.loads(call["function"]["arguments"]) == {"query": "pydantic ai"}
    assert "https://ai.pydantic.dev/" in _tool_messages(read)[call["id"]]


async def test_ag_ui_client_reads_a_subagent_inside_its_parent(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "ag-ui", "ask the subagent")

    calls = {call["function"]["name"]: call["id"] for call in _assistant_tool_calls(read)}
    results = _tool_messages(read)
    assert NOTES_TEXT in results[calls["Read"]]
    assert "REPORT:" in results[calls["Agent"]]
    # The subagent's call starts after the Agent call and ends before its result: it ran inside it.
    timeline = [
        (event["type"], event.get("toolCallId"))
        for event in read["events"]
        if event["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT")
    ]
    assert timeline == [
        ("TOOL_CALL_START", calls["Agent"]),
        ("TOOL_CALL_START", calls["Read"]),
        ("TOOL_CALL_RESULT", calls["Read"]),
        ("TOOL_CALL_RESULT", calls["Agent"]),
    ]


async def test_ag_ui_client_reads_an_approval_request(served: tuple[str, OfflineBackend], read_stream: Any):
    read = await read_from(served, read_stream, "ag-ui", "delete the file")

    [call] = [call for call in _assistant_tool_calls(read) if call["function"]["name"] == "delete_file"]
    assert call["id"] not in _tool_messages(read), "the tool must not have run"
    finished = read["finished"]
    assert call["id"] in (finished.get("pendingToolCallIds") or []) or finished["outcome"] == "interrupt", finished
