"""The three tools of the contract and ``TavilyToolset``, the toolset that carries them.

How a failure reaches the model: the tools raise pydantic-ai exceptions whose message is the contract's
error text (``Tavily API エラー: ...`` / ``エラータイプ: ...``), so the model sees that text as the tool
result, flagged as an error (``ToolReturnPart.outcome`` ``'retried'``/``'failed'``, Anthropic's ``is_error``):

- ``VALIDATION_ERROR`` raises ``ModelRetry``: the model can correct its arguments (this uses the tool's
  retry budget).
- every other error (after the client's own retries) raises ``ToolFailed``: a terminal failure the model
  should adapt to, without spending the retry budget.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, TypeAlias, cast

from pydantic import Field
from pydantic_ai import RunContext, Tool
from pydantic_ai.exceptions import ModelRetry, ToolFailed, UserError
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import FunctionToolset

from claudecode_model.tavily._client import TavilySearchClient
from claudecode_model.tavily._deps import TavilySearchDeps
from claudecode_model.tavily._errors import TavilyAPIError, TavilyErrorType
from claudecode_model.tavily._format import (
    DEFAULT_CONTEXT_MAX_TOKENS,
    build_context,
    format_context,
    format_extract,
    format_search,
)
from claudecode_model.tavily._log import ToolStatus, log_verbose_tool_done, log_verbose_tool_start
from claudecode_model.tavily._models import ExtractFailure
from claudecode_model.tavily._validation import (
    MAX_QUERY_LENGTH,
    MAX_RESULTS_LIMIT,
    MAX_URLS,
    SEARCH_DEPTHS,
    check_urls,
    validate_max_results,
    validate_max_tokens,
    validate_query,
    validate_search_depth,
)

__all__ = [
    "TOOL_DESCRIPTIONS",
    "TavilyDepsResolver",
    "TavilyToolset",
    "tavily_context",
    "tavily_extract",
    "tavily_search",
]

# The parameter types carry the contract's constraints into the JSON schema the model sees. They are
# schema-only (``json_schema_extra``): the tools check the values themselves, so every violation comes back in
# the contract's VALIDATION_ERROR format rather than as pydantic's generic validation message.
QueryParam: TypeAlias = Annotated[str, Field(json_schema_extra={"minLength": 1, "maxLength": MAX_QUERY_LENGTH})]
SearchDepthParam: TypeAlias = Annotated[str, Field(json_schema_extra={"enum": list(SEARCH_DEPTHS)})]
MaxResultsParam: TypeAlias = Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": MAX_RESULTS_LIMIT})]
MaxTokensParam: TypeAlias = Annotated[int, Field(json_schema_extra={"minimum": 1})] | None
UrlsParam: TypeAlias = Annotated[list[str], Field(json_schema_extra={"minItems": 1, "maxItems": MAX_URLS})]

TOOL_DESCRIPTIONS: Mapping[str, str] = {
    "tavily_search": "Web検索を実行し、検索結果（タイトル、URL、コンテンツ概要、スコア）を返却する。",
    "tavily_extract": "指定したURL群からコンテンツを抽出する。",
    "tavily_context": "RAG（検索拡張生成）用に最適化された検索コンテキスト文字列を取得する。",
}
"""The tool descriptions the model sees (the overview sentences of the contract)."""

TavilyDepsResolver: TypeAlias = Callable[[RunContext[AgentDepsT]], TavilySearchDeps]
"""Finds the ``TavilySearchDeps`` in a run whose deps are of another type: ``lambda ctx: ctx.deps.tavily``."""


def _deps_of_run(ctx: RunContext[Any]) -> TavilySearchDeps:
    deps = ctx.deps
    if isinstance(deps, TavilySearchDeps):
        return deps
    if deps is None:
        return TavilySearchDeps()
    raise UserError(
        f"the Tavily tools need TavilySearchDeps, but this run's deps are {type(deps).__name__}: "
        "use TavilyToolset(deps=TavilySearchDeps(...)) or TavilyToolset(deps=lambda ctx: ctx.deps.<field>)"
    )


async def _run_logged(tool_name: str, arguments: Mapping[str, object], body: Callable[[], Awaitable[str]]) -> str:
    """Run ``body`` between the start/done logs; a ``TavilyAPIError`` becomes what the model is shown."""
    log_verbose_tool_start(tool_name, arguments)
    start_time = time.perf_counter()
    status: ToolStatus = "failed"
    try:
        text = await body()
        status = "success"
        return text
    except TavilyAPIError as error:
        if error.error_type is TavilyErrorType.VALIDATION_ERROR:
            raise ModelRetry(str(error)) from error
        raise ToolFailed(str(error)) from error
    finally:
        log_verbose_tool_done(tool_name, status, (time.perf_counter() - start_time) * 1000)


async def _search(deps: TavilySearchDeps, query: str, search_depth: str = "basic", max_results: int = 5) -> str:
    async def body() -> str:
        clean_query = validate_query(query)
        depth = validate_search_depth(search_depth)
        count = validate_max_results(max_results)
        async with TavilySearchClient(deps) as client:
            response = await client.search(clean_query, search_depth=depth, max_results=count)
        return format_search(clean_query, response.results)

    arguments = {"query": query, "search_depth": search_depth, "max_results": max_results}
    return await _run_logged("tavily_search", arguments, body)


async def _extract(deps: TavilySearchDeps, urls: list[str]) -> str:
    async def body() -> str:
        checked = check_urls(urls)
        if not checked.valid:
            return format_extract([], checked.invalid)
        async with TavilySearchClient(deps) as client:
            response = await client.extract(checked.valid)
        failed = response.failed_results
        if not response.results and not failed:
            failed = [ExtractFailure(url=url, error="no content returned") for url in checked.valid]
        return format_extract(response.results, [*checked.invalid, *failed])

    return await _run_logged("tavily_extract", {"urls": urls}, body)


async def _context(deps: TavilySearchDeps, query: str, max_tokens: int | None = None) -> str:
    async def body() -> str:
        clean_query = validate_query(query)
        budget = validate_max_tokens(max_tokens)
        async with TavilySearchClient(deps) as client:
            response = await client.search(clean_query, search_depth="basic", max_results=5)
        context = build_context(response.results, DEFAULT_CONTEXT_MAX_TOKENS if budget is None else budget)
        return format_context(clean_query, context)

    return await _run_logged("tavily_context", {"query": query, "max_tokens": max_tokens}, body)


async def tavily_search(
    ctx: RunContext[TavilySearchDeps],
    query: QueryParam,
    search_depth: SearchDepthParam = "basic",
    max_results: MaxResultsParam = 5,
) -> str:
    """
    Web検索を実行する。

    Args:
        ctx: 実行コンテキスト（依存性注入）
        query: 検索クエリ（必須、空文字禁止、最大1000文字）
        search_depth: 検索詳細度 ("basic" または "advanced")
        max_results: 結果数 (1-20、デフォルト: 5)

    Returns:
        検索結果をフォーマットした文字列

    Raises:
        TavilyAPIError: API呼び出しエラー（認証失敗、レート制限等）
    """
    return await _search(_deps_of_run(ctx), query, search_depth, max_results)


async def tavily_extract(
    ctx: RunContext[TavilySearchDeps],
    urls: UrlsParam,
) -> str:
    """
    URL群からコンテンツを抽出する。

    Args:
        ctx: 実行コンテキスト（依存性注入）
        urls: 抽出対象URL群（必須、空リスト禁止、各URLはhttp/https必須）

    Returns:
        抽出結果をフォーマットした文字列

    Raises:
        TavilyAPIError: API呼び出しエラー
    """
    return await _extract(_deps_of_run(ctx), urls)


async def tavily_context(
    ctx: RunContext[TavilySearchDeps],
    query: QueryParam,
    max_tokens: MaxTokensParam = None,
) -> str:
    """
    RAG用検索コンテキストを取得する。

    Args:
        ctx: 実行コンテキスト（依存性注入）
        query: 検索クエリ（必須、空文字禁止、最大1000文字）
        max_tokens: 最大トークン数（省略時はAPI側デフォルト）

    Returns:
        RAG用に最適化されたコンテキスト文字列

    Raises:
        TavilyAPIError: API呼び出しエラー
    """
    return await _context(_deps_of_run(ctx), query, max_tokens)


_IMPLEMENTATIONS: tuple[tuple[Callable[..., Awaitable[str]], Callable[..., Awaitable[str]]], ...] = (
    (tavily_search, _search),
    (tavily_extract, _extract),
    (tavily_context, _context),
)


def _bind(
    public: Callable[..., Awaitable[str]],
    implementation: Callable[..., Awaitable[str]],
    resolve: Callable[[RunContext[Any]], TavilySearchDeps],
) -> Callable[..., Awaitable[str]]:
    """``public``'s signature and docstring, with the deps found by ``resolve`` instead of ``ctx.deps``."""

    @functools.wraps(public)
    async def tool(ctx: RunContext[Any], *args: Any, **kwargs: Any) -> str:
        deps = resolve(ctx)
        if not isinstance(deps, TavilySearchDeps):
            raise UserError(f"the Tavily deps resolver returned {type(deps).__name__}, not TavilySearchDeps")
        return await implementation(deps, *args, **kwargs)

    return tool


class TavilyToolset(FunctionToolset[AgentDepsT]):
    """The toolset of ``tavily_search``, ``tavily_extract`` and ``tavily_context``; add it to any agent.

    Where the tools find their :class:`TavilySearchDeps`:

    - ``TavilyToolset()``: the run's ``deps`` (an agent with ``deps_type=TavilySearchDeps``); a run without
      deps uses ``TavilySearchDeps()``, i.e. the key from ``TAVILY_API_KEY``.
    - ``TavilyToolset(deps=TavilySearchDeps(...))``: always these settings, whatever the run's deps are.
    - ``TavilyToolset[AppDeps](deps=lambda ctx: ctx.deps.tavily)``: taken from the run's own deps type
      (the type argument lets type checkers see ``ctx.deps`` as ``AppDeps`` inside the lambda).

    Example::

        agent = Agent(model, toolsets=[TavilyToolset(deps=TavilySearchDeps(api_key=...))])
    """

    def __init__(
        self,
        deps: TavilySearchDeps | TavilyDepsResolver[AgentDepsT] | None = None,
        *,
        max_retries: int | None = None,
        id: str | None = None,
    ) -> None:
        resolve: Callable[[RunContext[Any]], TavilySearchDeps]
        match deps:
            case None:
                resolve = _deps_of_run
            case TavilySearchDeps():
                fixed = deps
                resolve = lambda _ctx: fixed  # noqa: E731
            case _:
                resolve = cast("Callable[[RunContext[Any]], TavilySearchDeps]", deps)
        self.deps_source = deps
        tools: list[Tool[AgentDepsT]] = [
            Tool(
                _bind(public, implementation, resolve),
                takes_ctx=True,
                name=public.__name__,
                description=TOOL_DESCRIPTIONS[public.__name__],
            )
            for public, implementation in _IMPLEMENTATIONS
        ]
        super().__init__(tools, max_retries=max_retries, id=id)
