"""The three tools through a pydantic-ai Agent (FunctionModel) against the local Tavily stand-in."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from claudecode_model.tavily import (
    TOOL_DESCRIPTIONS,
    TavilySearchDeps,
    TavilyToolset,
    tavily_context,
    tavily_extract,
    tavily_search,
)
from claudecode_model.tavily.testing import FakeTavilyServer, generated_search_results

QUERY_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "検索クエリ（必須、空文字禁止、最大1000文字）",
}
"""The ``query`` parameter of ``tavily_search`` and ``tavily_context``."""


def calling(tool_name: str, args: dict[str, Any]) -> FunctionModel:
    """A model that calls ``tool_name`` once, then answers ``done``."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name, args, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def call_tool(
    tool_name: str, args: dict[str, Any], toolset: TavilyToolset[Any], *, deps: Any = None
) -> ToolReturnPart:
    agent = Agent(calling(tool_name, args), toolsets=[toolset])
    result = await agent.run("research", deps=deps)
    assert result.output == "done"
    [part] = [part for message in result.all_messages() for part in message.parts if isinstance(part, ToolReturnPart)]
    assert part.tool_name == tool_name
    return part


def error_text(error_type: str, message: str) -> str:
    return f"Tavily API エラー: {message}\nエラータイプ: {error_type}"


def search_text(query: str, count: int) -> str:
    blocks = [
        f"### {n}. {r['title']}\nURL: {r['url']}\nスコア: {r['score']:.2f}\n{r['content']}"
        for n, r in enumerate(generated_search_results(query, count), start=1)
    ]
    return "\n\n".join([f"## 検索結果: {query}", *blocks])


# --- what the model sees ---------------------------------------------------------------------------------


async def test_tool_definitions_carry_the_contract_constraints(deps: TavilySearchDeps) -> None:
    seen: dict[str, Any] = {}

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({tool.name: tool for tool in info.function_tools})
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(respond), toolsets=[TavilyToolset(deps=deps)]).run("hi")
    assert sorted(seen) == ["tavily_context", "tavily_extract", "tavily_search"]
    for name, tool in seen.items():
        assert tool.description == TOOL_DESCRIPTIONS[name]
    assert seen["tavily_search"].parameters_json_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": QUERY_SCHEMA,
            "search_depth": {
                "type": "string",
                "enum": ["basic", "advanced"],
                "default": "basic",
                "description": '検索詳細度 ("basic" または "advanced")',
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "default": 5,
                "description": "結果数 (1-20、デフォルト: 5)",
            },
        },
        "required": ["query"],
    }
    assert seen["tavily_extract"].parameters_json_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "urls": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 20,
                "description": "抽出対象URL群（必須、空リスト禁止、各URLはhttp/https必須）",
            }
        },
        "required": ["urls"],
    }
    assert seen["tavily_context"].parameters_json_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": QUERY_SCHEMA,
            "max_tokens": {
                "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
                "default": None,
                "description": "最大トークン数（省略時はAPI側デフォルト）",
            },
        },
        "required": ["query"],
    }


def test_toolset_is_a_function_toolset(deps: TavilySearchDeps) -> None:
    toolset = TavilyToolset(deps=deps, max_retries=2, id="tavily")
    assert isinstance(toolset, FunctionToolset)
    assert sorted(toolset.tools) == ["tavily_context", "tavily_extract", "tavily_search"]
    assert toolset.id == "tavily"
    assert all(tool.max_retries == 2 for tool in toolset.tools.values())


# --- tavily_search ----------------------------------------------------------------------------------------


async def test_search_result_reaches_the_model_in_the_contract_format(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps
) -> None:
    part = await call_tool(
        "tavily_search",
        {"query": " Claude Code ", "search_depth": "advanced", "max_results": 2},
        TavilyToolset(deps=deps),
    )
    assert part.outcome == "success"
    assert part.content == search_text("Claude Code", 2)
    [request] = fake_tavily.requests
    assert (request.body["query"], request.body["search_depth"], request.body["max_results"]) == (
        "Claude Code",
        "advanced",
        2,
    )


async def test_search_defaults(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=deps))
    assert part.content == search_text("q", 5)
    assert (fake_tavily.requests[0].body["search_depth"], fake_tavily.requests[0].body["max_results"]) == (
        "basic",
        5,
    )


async def test_search_without_results(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.reset(search_results=[])
    part = await call_tool("tavily_search", {"query": "zzz"}, TavilyToolset(deps=deps))
    assert part.outcome == "success"
    assert part.content == "## 検索結果: zzz\n\n検索結果が見つかりませんでした。"


# --- validation errors come back as retries in the contract format ----------------------------------------


@pytest.mark.parametrize(
    ("tool_name", "args", "message"),
    [
        ("tavily_search", {"query": ""}, "query must not be empty or whitespace only"),
        ("tavily_search", {"query": "   "}, "query must not be empty or whitespace only"),
        ("tavily_search", {"query": "x" * 1001}, "query is too long: 1001 characters (at most 1000)"),
        (
            "tavily_search",
            {"query": "q", "search_depth": "ultra"},
            "search_depth must be 'basic' or 'advanced', got 'ultra'",
        ),
        (
            "tavily_search",
            {"query": "q", "max_results": 0},
            "max_results must be an integer from 1 to 20, got 0",
        ),
        (
            "tavily_search",
            {"query": "q", "max_results": 21},
            "max_results must be an integer from 1 to 20, got 21",
        ),
        ("tavily_extract", {"urls": []}, "urls must contain at least one URL"),
        (
            "tavily_extract",
            {"urls": [f"https://e.example/{n}" for n in range(21)]},
            "too many URLs: 21 (at most 20 per call)",
        ),
        ("tavily_context", {"query": ""}, "query must not be empty or whitespace only"),
        (
            "tavily_context",
            {"query": "q", "max_tokens": 0},
            "max_tokens must be an integer >= 1 or null, got 0",
        ),
    ],
)
async def test_validation_error_is_a_retry_with_the_contract_message(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, tool_name: str, args: dict[str, Any], message: str
) -> None:
    part = await call_tool(tool_name, args, TavilyToolset(deps=deps))
    assert part.outcome == "retried"
    assert part.content == error_text("VALIDATION_ERROR", message)
    assert fake_tavily.requests == []


async def test_api_400_is_a_retry_too(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=400, detail="Bad query.")
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=deps))
    assert part.outcome == "retried"
    assert part.content == error_text("VALIDATION_ERROR", "the API rejected the request (HTTP 400): Bad query.")


# --- API errors come back as failed tool results in the contract format -----------------------------------


async def test_invalid_key_is_a_failed_auth_error(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=replace(deps, api_key="tvly-bad")))
    assert part.outcome == "failed"
    assert part.content == error_text(
        "AUTH_ERROR", "the API key was rejected (HTTP 401): Unauthorized: missing or invalid API key."
    )
    assert len(fake_tavily.requests) == 1


@pytest.mark.parametrize("tool_name", ["tavily_search", "tavily_extract", "tavily_context"])
async def test_missing_key_is_a_failed_auth_error_without_request(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, tool_name: str
) -> None:
    args = {"urls": ["https://a.example"]} if tool_name == "tavily_extract" else {"query": "q"}
    part = await call_tool(tool_name, args, TavilyToolset(deps=replace(deps, api_key=None)))
    assert part.outcome == "failed"
    assert part.content == error_text(
        "AUTH_ERROR", "no Tavily API key: pass TavilySearchDeps(api_key=...) or set TAVILY_API_KEY"
    )
    assert fake_tavily.requests == []


@pytest.mark.parametrize("tool_name", ["tavily_search", "tavily_context"])
async def test_rate_limit_is_retried_then_reported(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, tool_name: str
) -> None:
    fake_tavily.inject("/search", status=429, times=10, detail="Slow down.")
    part = await call_tool(tool_name, {"query": "q"}, TavilyToolset(deps=deps))
    assert part.outcome == "failed"
    assert part.content == error_text(
        "RATE_LIMIT_ERROR", "rate limit exceeded (HTTP 429): Slow down. (gave up after 4 attempts)"
    )
    assert len(fake_tavily.requests) == 4


async def test_rate_limit_then_success(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", status=429, times=3)
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=deps))
    assert part.outcome == "success"
    assert part.content == search_text("q", 5)
    assert len(fake_tavily.requests) == 4


@pytest.mark.parametrize(
    ("status", "error_type"), [(403, "FORBIDDEN_ERROR"), (500, "SERVER_ERROR"), (404, "UNKNOWN_ERROR")]
)
async def test_http_errors_are_failed_results(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, status: int, error_type: str
) -> None:
    fake_tavily.inject("/extract", status=status, times=10, detail="Nope.")
    part = await call_tool("tavily_extract", {"urls": ["https://a.example"]}, TavilyToolset(deps=deps))
    assert part.outcome == "failed"
    assert isinstance(part.content, str)
    assert part.content.startswith("Tavily API エラー: ")
    assert part.content.endswith(f"\nエラータイプ: {error_type}")
    assert "Nope." in part.content


async def test_timeout_is_a_failed_result(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.inject("/search", delay=30, times=2)
    toolset = TavilyToolset(deps=replace(deps, timeout=0.2, max_retries=1))
    part = await call_tool("tavily_search", {"query": "q"}, toolset)
    assert part.outcome == "failed"
    assert part.content == error_text(
        "TIMEOUT_ERROR", "request timed out: Request timed out after 0.2 seconds. (gave up after 2 attempts)"
    )


async def test_refused_connection_is_a_failed_result(deps: TavilySearchDeps, refusing_port: int) -> None:
    toolset = TavilyToolset(deps=replace(deps, api_base_url=f"http://127.0.0.1:{refusing_port}"))
    part = await call_tool("tavily_search", {"query": "q"}, toolset)
    assert part.outcome == "failed"
    assert isinstance(part.content, str)
    assert part.content.endswith("\nエラータイプ: NETWORK_ERROR")


# --- tavily_extract ---------------------------------------------------------------------------------------


async def test_extract_mixes_results_local_and_remote_failures(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    fake_tavily.reset(
        pages={"https://a.example/": "Page A", "http://b.example/": "Page B"},
        failing_urls={"https://c.example/": "Failed to fetch url"},
    )
    urls = [
        "https://a.example/",
        "example.com",
        "http://b.example/",
        "https://a.example/",
        "https://c.example/",
    ]
    with caplog.at_level(logging.WARNING, logger="claudecode_model.tavily"):
        part = await call_tool("tavily_extract", {"urls": urls}, TavilyToolset(deps=deps))
    [request] = fake_tavily.requests
    assert request.body["urls"] == ["https://a.example/", "http://b.example/", "https://c.example/"]
    assert part.outcome == "success"
    assert part.content == (
        "## コンテンツ抽出結果\n\n"
        "### URL: https://a.example/\nPage A\n\n---\n\n"
        "### URL: http://b.example/\nPage B\n\n---\n\n"
        "## 失敗したURL\n"
        "- example.com: invalid URL: missing scheme (http:// or https:// required)\n"
        "- https://c.example/: Failed to fetch url"
    )
    assert any("http://b.example/" in record.getMessage() for record in caplog.records)


async def test_extract_all_succeeded(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_extract", {"urls": ["https://a.example"]}, TavilyToolset(deps=deps))
    assert part.content == "## コンテンツ抽出結果\n\n### URL: https://a.example\nContent of https://a.example."


async def test_extract_all_invalid_makes_no_request(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_extract", {"urls": ["example.com", "https:///x"]}, TavilyToolset(deps=deps))
    assert part.outcome == "success"
    assert part.content == (
        "## コンテンツ抽出結果\n\n"
        "すべてのURLからコンテンツを抽出できませんでした。\n\n"
        "## 失敗したURL\n"
        "- example.com: invalid URL: missing scheme (http:// or https:// required)\n"
        "- https:///x: invalid URL: missing host name"
    )
    assert fake_tavily.requests == []


async def test_extract_all_failed_remotely(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    fake_tavily.reset(failing_urls={"https://a.example": "blocked"})
    part = await call_tool("tavily_extract", {"urls": ["https://a.example"]}, TavilyToolset(deps=deps))
    assert part.content == (
        "## コンテンツ抽出結果\n\nすべてのURLからコンテンツを抽出できませんでした。\n\n"
        "## 失敗したURL\n- https://a.example: blocked"
    )


# --- tavily_context ---------------------------------------------------------------------------------------


async def test_context_within_the_default_budget(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_context", {"query": "rag"}, TavilyToolset(deps=deps))
    sources = ", ".join(
        f'{{"url": "https://example.com/rag/{n}", "content": "Summary {n} about rag."}}' for n in range(1, 6)
    )
    assert part.content == f"## RAG用検索コンテキスト: rag\n\n[{sources}]"
    assert fake_tavily.requests[0].body["max_results"] == 5


async def test_context_respects_max_tokens(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_context", {"query": "rag", "max_tokens": 30}, TavilyToolset(deps=deps))
    assert part.content == (
        '## RAG用検索コンテキスト: rag\n\n[{"url": "https://example.com/rag/1", "content": "Summary 1 about rag."}]'
    )


# --- where the tools find their deps ----------------------------------------------------------------------


async def test_toolset_reads_the_runs_deps(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    agent = Agent(calling("tavily_search", {"query": "q"}), deps_type=TavilySearchDeps, toolsets=[TavilyToolset()])
    result = await agent.run("go", deps=deps)
    assert result.output == "done"
    assert len(fake_tavily.requests) == 1


async def test_plain_functions_as_agent_tools(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    agent = Agent(
        calling("tavily_search", {"query": "q"}),
        deps_type=TavilySearchDeps,
        tools=[tavily_search, tavily_extract, tavily_context],
    )
    result = await agent.run("go", deps=deps)
    [part] = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert part.content == search_text("q", 5)


@dataclass
class AppDeps:
    user: str
    tavily: TavilySearchDeps


async def test_resolver_for_other_deps_types(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    toolset = TavilyToolset[AppDeps](deps=lambda ctx: ctx.deps.tavily)
    agent = Agent(calling("tavily_search", {"query": "q"}), deps_type=AppDeps, toolsets=[toolset])
    result = await agent.run("go", deps=AppDeps(user="me", tavily=deps))
    assert result.output == "done"
    assert len(fake_tavily.requests) == 1


async def test_fixed_deps_ignore_the_runs_deps(fake_tavily: FakeTavilyServer, deps: TavilySearchDeps) -> None:
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=deps), deps=AppDeps("me", deps))
    assert part.outcome == "success"


async def test_run_without_deps_uses_the_environment(
    fake_tavily: FakeTavilyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fake_tavily.api_key is not None
    monkeypatch.setenv("TAVILY_API_KEY", fake_tavily.api_key)
    # Only the base URL can't come from the environment: a resolver supplies it and leaves the key unset.
    toolset = TavilyToolset[None](deps=lambda ctx: TavilySearchDeps(api_base_url=fake_tavily.base_url))
    part = await call_tool("tavily_search", {"query": "q"}, toolset)
    assert part.outcome == "success"
    assert fake_tavily.requests[0].authorization == f"Bearer {fake_tavily.api_key}"


async def test_run_without_deps_and_without_key_fails_clearly() -> None:
    part = await call_tool("tavily_search", {"query": "q"}, TavilyToolset())
    assert part.outcome == "failed"
    assert isinstance(part.content, str)
    assert part.content.endswith("エラータイプ: AUTH_ERROR")


async def test_deps_of_another_type_is_a_usage_error() -> None:
    agent = Agent(calling("tavily_search", {"query": "q"}), deps_type=AppDeps, toolsets=[TavilyToolset()])
    with pytest.raises(UserError, match="need TavilySearchDeps, but this run's deps are AppDeps"):
        await agent.run("go", deps=AppDeps("me", TavilySearchDeps()))


async def test_resolver_returning_another_type_is_a_usage_error() -> None:
    toolset = TavilyToolset[AppDeps](deps=lambda ctx: ctx.deps)  # type: ignore[arg-type,return-value]  # the wrong type, on purpose
    agent = Agent(calling("tavily_search", {"query": "q"}), deps_type=AppDeps, toolsets=[toolset])
    with pytest.raises(UserError, match="resolver returned AppDeps"):
        await agent.run("go", deps=AppDeps("me", TavilySearchDeps()))


# --- logging (contract section 5) -------------------------------------------------------------------------


async def test_start_and_done_are_logged(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="claudecode_model.tavily"):
        await call_tool("tavily_search", {"query": "logged query"}, TavilyToolset(deps=deps))
        await call_tool("tavily_search", {"query": ""}, TavilyToolset(deps=deps))
    records = [record for record in caplog.records if hasattr(record, "tool_name")]
    assert [(r.tool_name, getattr(r, "tool_status", "start")) for r in records] == [
        ("tavily_search", "start"),
        ("tavily_search", "success"),
        ("tavily_search", "start"),
        ("tavily_search", "failed"),
    ]
    assert vars(records[0])["tool_arguments"]["query"] == "logged query"  # a record's extras are its attributes
    assert "logged query" in records[0].getMessage()
    for done in (records[1], records[3]):
        elapsed = vars(done)["execution_time_ms"]
        assert isinstance(elapsed, float)
        assert elapsed >= 0
        assert f"{elapsed:.1f} ms" in done.getMessage()


async def test_extract_logs_the_urls(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="claudecode_model.tavily"):
        await call_tool("tavily_extract", {"urls": ["https://a.example"]}, TavilyToolset(deps=deps))
    [start] = [r for r in caplog.records if hasattr(r, "tool_arguments")]
    assert start.tool_arguments == {"urls": ["https://a.example"]}


async def test_the_api_key_never_reaches_logs_or_the_model(
    fake_tavily: FakeTavilyServer, deps: TavilySearchDeps, caplog: pytest.LogCaptureFixture
) -> None:
    key = deps.api_key
    assert key is not None
    fake_tavily.inject("/search", status=429, times=2, detail=f"quota for {key} exhausted")
    fake_tavily.inject("/extract", status=401, detail=f"key {key} revoked")
    with caplog.at_level(logging.DEBUG):
        parts = [
            await call_tool("tavily_search", {"query": "q"}, TavilyToolset(deps=deps)),
            await call_tool("tavily_extract", {"urls": ["https://a.example"]}, TavilyToolset(deps=deps)),
            await call_tool("tavily_context", {"query": "q"}, TavilyToolset(deps=replace(deps, api_key=None))),
        ]
    assert [part.outcome for part in parts] == ["success", "failed", "failed"]
    assert "key *** revoked" in str(parts[1].content)
    assert caplog.records
    for record in caplog.records:
        assert key not in record.getMessage()
        assert key not in repr(record.__dict__)
    assert all(key not in str(part.content) for part in parts)
