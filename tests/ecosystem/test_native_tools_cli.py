"""pydantic-ai's native tools through the real CLI: web search and fetch as Claude Code's WebSearch / WebFetch, an
MCP server tool as a remote MCP server of the CLI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.capabilities import NativeTool, WebFetch, WebSearch
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.native_tools import (
    AbstractNativeTool,
    CodeExecutionTool,
    MCPServerTool,
    MemoryTool,
    WebFetchTool,
    WebSearchTool,
)

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.asgi import serve_asgi
from tests._support.brains import calls_then_results
from tests._support.responses import native_parts, started_native_kinds

pytestmark = pytest.mark.cli

SEARCH_RESULTS = [
    {
        "type": "web_search_result",
        "url": "https://ai.pydantic.dev/",
        "title": "Pydantic AI",
        "encrypted_content": "offline",
        "page_age": None,
    },
    {
        "type": "web_search_result",
        "url": "https://docs.pydantic.dev/",
        "title": "Pydantic docs",
        "encrypted_content": "offline",
        "page_age": None,
    },
]


def web_brain(*calls: tuple[str, dict[str, object]]):
    """Claude: make ``calls`` first, then answer with the results. The API's web search: search and summarise."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names = [tool.name for tool in info.function_tools]
        if names == ["web_search"]:  # the CLI's own request to the API's server-side web search
            prompt = messages[-1].parts[-1]
            assert isinstance(prompt, UserPromptPart)
            query = str(prompt.content).rsplit(": ", 1)[-1]
            return ModelResponse(
                parts=[
                    NativeToolCallPart("web_search", {"query": query}, tool_call_id="search-1"),
                    NativeToolReturnPart("web_search", SEARCH_RESULTS, tool_call_id="search-1"),
                    TextPart(f"Pydantic AI is an agent framework (searched for {query})."),
                ]
            )
        return calls_then_results(*calls)(messages, info)

    return brain


async def test_web_search_capability_runs_claude_codes_web_search(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain(FunctionModel(web_brain(("WebSearch", {"query": "pydantic ai"}))))
    agent = Agent(model, capabilities=[WebSearch()])

    events = []
    async with agent.run_stream_events("What is Pydantic AI?") as stream:
        async for event in stream:
            events.append(event)

    main, search, after = claude_backend.requests
    assert "WebSearch" in main.tool_names
    assert main.tool("WebSearch").parameters_json_schema["properties"]["query"]
    assert search.raw["tools"][0]["type"].startswith("web_search_")  # the API's server tool, run by the API
    assert search.last_user_text().endswith("pydantic ai")
    [result] = after.tool_results()
    assert "https://ai.pydantic.dev/" in result.text  # the CLI turned the API's results into the tool result
    assert "searched for pydantic ai" in result.text

    [final] = [event.result for event in events if isinstance(event, AgentRunResultEvent)]
    [call], [returned] = native_parts(final.all_messages()[-1])
    assert (call.tool_name, call.args_as_dict()) == ("web_search", {"query": "pydantic ai"})
    assert call.provider_name == "claude-code"
    assert (call.provider_details or {}).get("cli_tool_name") == "WebSearch"
    assert returned.tool_call_id == call.tool_call_id
    assert returned.tool_name == "web_search"
    assert "https://docs.pydantic.dev/" in str(returned.content)
    assert returned.outcome == "success"
    assert started_native_kinds(events, "web_search") == {NativeToolCallPart, NativeToolReturnPart}


async def test_native_tool_capability_and_search_domains(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    asked: dict[str, object] = {"query": "pydantic", "allowed_domains": ["docs.pydantic.dev", "elsewhere.example"]}
    claude_backend.set_brain(FunctionModel(web_brain(("WebSearch", asked))))
    agent = Agent(model, capabilities=[NativeTool(WebSearchTool(allowed_domains=["pydantic.dev"]))])

    result = await agent.run("Search the docs")

    search = claude_backend.requests[1]
    [server_tool] = search.raw["tools"]
    assert server_tool["allowed_domains"] == ["docs.pydantic.dev"]  # Claude's choice, held to the agent's filter
    [call], [returned] = native_parts(result.all_messages()[-1])
    assert call.tool_name == "web_search"
    assert "https://ai.pydantic.dev/" in str(returned.content)


async def test_web_fetch_outside_the_allowed_domains_is_denied(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    fetch: dict[str, object] = {"url": "https://elsewhere.example/page", "prompt": "Summarise"}
    claude_backend.set_brain(FunctionModel(web_brain(("WebFetch", fetch))))
    agent = Agent(model, capabilities=[WebFetch(allowed_domains=["pydantic.dev"])])

    result = await agent.run("Fetch that page")

    main = claude_backend.requests[0]
    assert "WebFetch" in main.tool_names
    assert "WebSearch" not in main.tool_names
    [call], [returned] = native_parts(result.all_messages()[-1])
    assert (call.tool_name, call.args_as_dict()) == ("web_fetch", fetch)
    assert returned.outcome == "failed"
    assert "elsewhere.example is not among the domains this agent may fetch: pydantic.dev" in str(returned.content)
    assert len(claude_backend.requests) == 2  # nothing was fetched, no fetch summary was asked for


async def test_max_uses_cannot_be_enforced_and_says_so(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model, capabilities=[NativeTool(WebSearchTool(max_uses=2))])

    with pytest.raises(UserError, match="max_uses"):
        await agent.run("hi")

    assert claude_backend.requests == []


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        (CodeExecutionTool(), "its Bash tool runs commands on this machine"),
        (MemoryTool(), "no counterpart of the API's memory tool"),
    ],
)
async def test_native_tools_without_a_counterpart_are_refused_with_the_reason(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, tool: AbstractNativeTool, reason: str
):
    with pytest.raises(UserError, match="not supported by this model") as raised:
        await Agent(model, capabilities=[NativeTool(tool)]).run("hi")

    assert reason in str(raised.value)
    assert claude_backend.requests == []


def test_the_profile_lists_the_tools_with_a_claude_code_counterpart():
    supported = ClaudeCodeModel().profile.get("supported_native_tools")

    assert supported == frozenset({WebSearchTool, WebFetchTool, MCPServerTool})
    assert CodeExecutionTool not in ClaudeCodeModel.supported_native_tools()


@asynccontextmanager
async def _mcp_server() -> AsyncIterator[tuple[str, list[str | None]]]:
    """A streamable-HTTP MCP server on 127.0.0.1 with a ``lookup`` and a ``forbidden`` tool; yields its URL and the
    Authorization headers of the calls it served."""
    seen_auth: list[str | None] = []
    server = MCPServer("notes")

    @server.tool(structured_output=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key} is teal"

    @server.tool(structured_output=False)
    def forbidden() -> str:
        """Not allowed."""
        return "ran"

    inner = server.streamable_http_app()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen_auth.append(headers.get(b"authorization", b"").decode() or None)
        await inner(scope, receive, send)

    async with serve_asgi(app, lifespan="on", graceful_shutdown=5) as url:
        yield f"{url}/mcp", seen_auth


async def test_mcp_server_tool_is_a_remote_mcp_server_of_the_cli(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    async with _mcp_server() as (url, seen_auth):
        claude_backend.set_brain(
            FunctionModel(web_brain(("mcp__notes__lookup", {"key": "colour"}), ("mcp__notes__forbidden", {})))
        )
        tool = MCPServerTool(id="notes", url=url, authorization_token="secret-token", allowed_tools=["lookup"])
        result = await Agent(model, capabilities=[NativeTool(tool)]).run("Look it up")
        await model.aclose()  # the kept CLI process holds a connection to the server

    main = claude_backend.requests[0]
    assert {"mcp__notes__lookup", "mcp__notes__forbidden"} <= set(main.tool_names)
    assert seen_auth
    assert set(seen_auth) == {"Bearer secret-token"}
    response = result.all_messages()[-1]
    calls, returns = native_parts(response)
    assert [(call.tool_name, call.args_as_dict()) for call in calls] == [
        ("mcp_server:notes", {"key": "colour"}),
        ("mcp_server:notes", {}),
    ]
    assert [(call.provider_details or {}).get("cli_tool_name") for call in calls] == [
        "mcp__notes__lookup",
        "mcp__notes__forbidden",
    ]
    by_id = {part.tool_call_id: part for part in returns}
    allowed, denied = (by_id[call.tool_call_id] for call in calls)
    assert (allowed.outcome, str(allowed.content)) == ("success", "colour is teal")
    assert denied.outcome == "failed"  # not among allowed_tools: the CLI refused it
    assert "ran" not in str(denied.content)


async def test_mcp_server_tool_id_must_not_take_the_agent_tools_server(model: ClaudeCodeModel):
    tool = MCPServerTool(id="pydantic_tools", url="http://127.0.0.1:9/mcp")

    with pytest.raises(UserError, match="'pydantic_tools' is taken"):
        await Agent(model, capabilities=[NativeTool(tool)]).run("hi")
