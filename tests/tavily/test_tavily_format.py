"""The contract's output formats (sections 2.4, 3.4, 4.4, 5.3) and the RAG context budget."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from claudecode_model.tavily import ExtractFailure, ExtractResult, SearchResult, TavilyAPIError
from claudecode_model.tavily._format import (
    build_context,
    estimate_tokens,
    format_context,
    format_extract,
    format_search,
)

RESULTS = [
    SearchResult(title="Pydantic AI", url="https://ai.pydantic.dev", content="Agent framework.", score=0.956),
    SearchResult(title="Claude Code", url="https://claude.com/code", content="行1\n行2", score=0.5),
]


def test_search_format() -> None:
    assert format_search("pydantic ai", RESULTS) == (
        "## 検索結果: pydantic ai\n"
        "\n"
        "### 1. Pydantic AI\n"
        "URL: https://ai.pydantic.dev\n"
        "スコア: 0.96\n"
        "Agent framework.\n"
        "\n"
        "### 2. Claude Code\n"
        "URL: https://claude.com/code\n"
        "スコア: 0.50\n"
        "行1\n行2"
    )


def test_search_format_without_results() -> None:
    assert format_search("nothing", []) == "## 検索結果: nothing\n\n検索結果が見つかりませんでした。"


def test_extract_format_all_succeeded() -> None:
    results = [ExtractResult("https://a.example", "A text"), ExtractResult("https://b.example", "B text")]
    assert format_extract(results, []) == (
        "## コンテンツ抽出結果\n\n### URL: https://a.example\nA text\n\n---\n\n### URL: https://b.example\nB text"
    )


def test_extract_format_single_success() -> None:
    assert format_extract([ExtractResult("https://a.example", "A")], []) == (
        "## コンテンツ抽出結果\n\n### URL: https://a.example\nA"
    )


def test_extract_format_with_failures() -> None:
    results = [ExtractResult("https://a.example", "A text"), ExtractResult("https://b.example", "B text")]
    failed = [ExtractFailure("example.com", "missing scheme"), ExtractFailure("https://c.example", "timeout")]
    assert format_extract(results, failed) == (
        "## コンテンツ抽出結果\n"
        "\n"
        "### URL: https://a.example\n"
        "A text\n"
        "\n"
        "---\n"
        "\n"
        "### URL: https://b.example\n"
        "B text\n"
        "\n"
        "---\n"
        "\n"
        "## 失敗したURL\n"
        "- example.com: missing scheme\n"
        "- https://c.example: timeout"
    )


def test_extract_format_all_failed() -> None:
    failed = [ExtractFailure("example.com", "missing scheme")]
    assert format_extract([], failed) == (
        "## コンテンツ抽出結果\n"
        "\n"
        "すべてのURLからコンテンツを抽出できませんでした。\n"
        "\n"
        "## 失敗したURL\n"
        "- example.com: missing scheme"
    )


def test_context_format() -> None:
    assert format_context("q", '[{"url": "u", "content": "c"}]') == (
        '## RAG用検索コンテキスト: q\n\n[{"url": "u", "content": "c"}]'
    )


def test_error_message_format() -> None:
    error = TavilyAPIError("RATE_LIMIT_ERROR", "rate limit exceeded")
    assert str(error) == "Tavily API エラー: rate limit exceeded\nエラータイプ: RATE_LIMIT_ERROR"
    assert error.error_type == "RATE_LIMIT_ERROR"
    assert error.retryable


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("日本語") == 3
    assert estimate_tokens("ab日本") == 3


def test_context_takes_whole_sources_in_order_while_they_fit() -> None:
    context = build_context(RESULTS, 4000)
    assert json.loads(context) == [
        {"url": "https://ai.pydantic.dev", "content": "Agent framework."},
        {"url": "https://claude.com/code", "content": "行1\n行2"},
    ]
    assert "行1" in context  # non-ASCII stays readable


def test_context_stops_before_the_source_that_does_not_fit() -> None:
    one = build_context(RESULTS[:1], 4000)
    context = build_context(RESULTS, estimate_tokens(one))
    assert json.loads(context) == [{"url": "https://ai.pydantic.dev", "content": "Agent framework."}]


def test_context_cuts_the_first_source_when_nothing_else_fits() -> None:
    long = SearchResult(title="t", url="https://x.example", content="word " * 400, score=1.0)
    context = build_context([long], 50)
    items = json.loads(context)
    assert items[0]["url"] == "https://x.example"
    assert 0 < len(items[0]["content"]) < len(long.content)
    assert long.content.startswith(items[0]["content"])
    assert estimate_tokens(context) <= 50


def test_context_of_no_results_or_a_budget_below_one_source() -> None:
    assert build_context([], 100) == "[]"
    assert build_context(RESULTS, 1) == "[]"


@given(
    contents=st.lists(st.text(max_size=300), max_size=6),
    max_tokens=st.integers(min_value=1, max_value=2000),
)
def test_context_never_exceeds_the_budget(contents: list[str], max_tokens: int) -> None:
    results = [
        SearchResult(title=f"t{n}", url=f"https://e.example/{n}", content=text, score=0.5)
        for n, text in enumerate(contents)
    ]
    context = build_context(results, max_tokens)
    items = json.loads(context)
    assert context == "[]" or estimate_tokens(context) <= max_tokens
    assert [item["url"] for item in items] == [result.url for result in results[: len(items)]]
