"""The Tavily tools end to end through the real Claude Code CLI, offline.

Claude is the offline backend (its brain a ``FunctionModel`` that sees the tools of each request as the CLI
offers them, ``mcp__pydantic_tools__tavily_*``); Tavily is ``FakeTavilyServer`` on 127.0.0.1. The tools are the
agent's own, exposed to the CLI automatically: nothing is registered.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model.tavily import (
    RESEARCH_INSTRUCTIONS,
    TOOL_DESCRIPTIONS,
    TavilySearchDeps,
    TavilyToolset,
    create_research_agent,
)
from claudecode_model.tavily.testing import FakeTavilyServer
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

SEARCH = "mcp__pydantic_tools__tavily_search"
EXTRACT = "mcp__pydantic_tools__tavily_extract"
CONTEXT = "mcp__pydantic_tools__tavily_context"

CANNED_RESULTS = [
    {
        "title": "Model Context Protocol",
        "url": "https://modelcontextprotocol.io/introduction",
        "content": "MCP is an open protocol that connects AI applications to tools and data.",
        "score": 0.91234,
    },
    {
        "title": "pydantic-ai",
        "url": "https://ai.pydantic.dev/",
        "content": "An agent framework for Python.",
        "score": 0.8,
    },
]

Turn = Callable[[list[ModelMessage]], ModelResponse]


def scripted(*turns: Turn) -> FunctionModel:
    """A brain that answers the n-th request with the n-th turn (each turn gets the conversation so far)."""
    count = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal count
        turn = turns[min(count, len(turns) - 1)]
        count += 1
        return turn(messages)

    return FunctionModel(respond)


def call(*calls: tuple[str, dict[str, Any]]) -> Turn:
    return lambda _messages: ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])


def answer(text: str) -> Turn:
    return lambda _messages: ModelResponse(parts=[TextPart(text)])


def error_text(error_type: str, message: str) -> str:
    return f"Tavily API エラー: {message}\nエラータイプ: {error_type}"


def tool_returns(result_messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results of the run: pydantic-ai ran the tools (agent-run execution), so they are its own returns."""
    return [
        part
        for message in result_messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


async def test_research_agent_searches_and_answers_through_the_cli(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    fake_tavily.reset(search_results=CANNED_RESULTS)

    def cite(messages: list[ModelMessage]) -> ModelResponse:
        [result] = claude_backend.requests[-1].tool_results()
        urls = [line.removeprefix("URL: ") for line in result.text.splitlines() if line.startswith("URL: ")]
        return ModelResponse(parts=[TextPart("MCP links agents to tools. Sources: " + ", ".join(urls))])

    claude_backend.set_brain(scripted(call((SEARCH, {"query": "What is MCP?", "max_results": 2})), cite))
    agent = create_research_agent(model, deps=deps)

    result = await agent.run("What is MCP?")

    assert result.output == (
        "MCP links agents to tools. Sources: https://modelcontextprotocol.io/introduction, https://ai.pydantic.dev/"
    )
    first, last = claude_backend.requests[0], claude_backend.requests[-1]
    assert {SEARCH, EXTRACT, CONTEXT} <= set(first.tool_names)
    assert RESEARCH_INSTRUCTIONS in first.system
    [tool_result] = last.tool_results()
    assert tool_result.text == (
        "## 検索結果: What is MCP?\n\n"
        "### 1. Model Context Protocol\nURL: https://modelcontextprotocol.io/introduction\nスコア: 0.91\n"
        "MCP is an open protocol that connects AI applications to tools and data.\n\n"
        "### 2. pydantic-ai\nURL: https://ai.pydantic.dev/\nスコア: 0.80\nAn agent framework for Python."
    )
    assert not tool_result.is_error
    [request] = fake_tavily.requests
    assert request.path == "/search"
    assert request.authorization == f"Bearer {deps.api_key}"
    assert request.body["query"] == "What is MCP?"
    assert request.body["max_results"] == 2
    assert [(part.tool_name, part.outcome) for part in tool_returns(result.all_messages())] == [
        ("tavily_search", "success")
    ]


async def test_claude_sees_the_contract_schemas(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, deps: TavilySearchDeps
) -> None:
    claude_backend.set_brain(scripted(answer("nothing to look up")))

    result = await Agent(model, toolsets=[TavilyToolset(deps=deps)]).run("hi")

    assert result.output == "nothing to look up"
    request = claude_backend.requests[0]
    search = request.tool(SEARCH).parameters_json_schema
    assert search["required"] == ["query"]
    assert search["properties"]["query"] | {"minLength": 1, "maxLength": 1000} == search["properties"]["query"]
    assert search["properties"]["query"]["type"] == "string"
    assert search["properties"]["search_depth"]["enum"] == ["basic", "advanced"]
    assert search["properties"]["search_depth"]["default"] == "basic"
    max_results = search["properties"]["max_results"]
    assert (max_results["type"], max_results["minimum"], max_results["maximum"], max_results["default"]) == (
        "integer",
        1,
        20,
        5,
    )
    urls = request.tool(EXTRACT).parameters_json_schema["properties"]["urls"]
    assert (urls["type"], urls["items"], urls["minItems"], urls["maxItems"]) == ("array", {"type": "string"}, 1, 20)
    max_tokens = request.tool(CONTEXT).parameters_json_schema["properties"]["max_tokens"]
    assert {"type": "integer", "minimum": 1} in max_tokens["anyOf"]
    assert {"type": "null"} in max_tokens["anyOf"]
    # The CLI hands Claude the descriptions NFKC-normalised: the full-width parentheses arrive as ASCII ones.
    for name in TOOL_DESCRIPTIONS:
        assert request.tool(f"mcp__pydantic_tools__{name}").description == unicodedata.normalize(
            "NFKC", TOOL_DESCRIPTIONS[name]
        )


async def test_extract_and_context_results_reach_claude(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    fake_tavily.reset(
        search_results=CANNED_RESULTS,
        pages={"https://ai.pydantic.dev/": "Pydantic AI docs."},
        failing_urls={"https://gone.example/": "page not found"},
    )
    urls = ["https://ai.pydantic.dev/", "https://gone.example/", "example.com"]
    claude_backend.set_brain(
        scripted(call((EXTRACT, {"urls": urls})), call((CONTEXT, {"query": "MCP", "max_tokens": 30})), answer("read"))
    )

    result = await Agent(model, toolsets=[TavilyToolset(deps=deps)]).run("read these")

    assert result.output == "read"
    extracted, context = claude_backend.requests[-1].tool_results()
    assert extracted.text == (
        "## コンテンツ抽出結果\n\n"
        "### URL: https://ai.pydantic.dev/\nPydantic AI docs.\n\n---\n\n"
        "## 失敗したURL\n"
        "- example.com: invalid URL: missing scheme (http:// or https:// required)\n"
        "- https://gone.example/: page not found"
    )
    assert not extracted.is_error
    assert context.text.startswith("## RAG用検索コンテキスト: MCP\n\n")
    assert "https://modelcontextprotocol.io/introduction" in context.text
    assert not context.is_error
    [extract_request] = fake_tavily.requests_to("/extract")
    assert extract_request.body["urls"] == ["https://ai.pydantic.dev/", "https://gone.example/"]
    assert len(fake_tavily.requests_to("/search")) == 1


@pytest.mark.parametrize(
    ("status", "error_type", "message", "requests"),
    [
        (401, "AUTH_ERROR", "the API key was rejected (HTTP 401): Unauthorized: missing or invalid API key.", 1),
        (
            432,
            "FORBIDDEN_ERROR",
            "access denied (HTTP 403/432/433: endpoint not allowed or plan limit reached): plan limit exceeded",
            1,
        ),
        (429, "RATE_LIMIT_ERROR", "rate limit exceeded (HTTP 429): slow down (gave up after 4 attempts)", 4),
    ],
)
async def test_api_errors_reach_claude_as_error_results(
    model: ClaudeCodeModel,
    claude_backend: OfflineBackend,
    fake_tavily: FakeTavilyServer,
    deps: TavilySearchDeps,
    status: int,
    error_type: str,
    message: str,
    requests: int,
) -> None:
    match status:
        case 401:
            deps = replace(deps, api_key="tvly-wrong-key")
        case 432:
            fake_tavily.inject("/search", status=432, detail="plan limit exceeded")
        case _:
            fake_tavily.inject("/search", status=429, detail="slow down", times=4)
    claude_backend.set_brain(scripted(call((SEARCH, {"query": "news"})), answer("the search failed")))

    result = await Agent(model, toolsets=[TavilyToolset(deps=deps)]).run("news?")

    assert result.output == "the search failed"
    [tool_result] = claude_backend.requests[-1].tool_results()
    assert tool_result.is_error
    assert tool_result.text == error_text(error_type, message)
    assert "tvly-wrong-key" not in tool_result.text
    assert len(fake_tavily.requests_to("/search")) == requests
    assert [part.outcome for part in tool_returns(result.all_messages())] == ["failed"]


async def test_missing_key_is_reported_without_a_request(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    claude_backend.set_brain(scripted(call((SEARCH, {"query": "news"})), answer("no key")))

    result = await Agent(model, toolsets=[TavilyToolset(deps=replace(deps, api_key=None))]).run("news?")

    assert result.output == "no key"
    [tool_result] = claude_backend.requests[-1].tool_results()
    assert tool_result.is_error
    assert tool_result.text == error_text(
        "AUTH_ERROR", "no Tavily API key: pass TavilySearchDeps(api_key=...) or set TAVILY_API_KEY"
    )
    assert fake_tavily.requests == []


async def test_invalid_arguments_come_back_to_claude_for_correction(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    claude_backend.set_brain(
        scripted(
            call((SEARCH, {"query": "   "})),
            call((SEARCH, {"query": "pydantic", "max_results": 1})),
            answer("found it"),
        )
    )

    result = await Agent(model, toolsets=[TavilyToolset(deps=deps)]).run("search")

    assert result.output == "found it"
    rejected, accepted = claude_backend.requests[-1].tool_results()
    assert rejected.is_error
    expected = error_text("VALIDATION_ERROR", "query must not be empty or whitespace only")
    # As pydantic-ai's Anthropic model does, the retried tool result is the bare text, flagged as an error.
    assert rejected.text == expected
    assert not accepted.is_error
    assert accepted.text.startswith("## 検索結果: pydantic\n\n### 1. pydantic - source 1\n")
    [request] = fake_tavily.requests
    assert request.body["query"] == "pydantic"
