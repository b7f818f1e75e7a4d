"""The contract's validation rules (sections 2.3, 3.3 and 4.3), one test per rule."""

from __future__ import annotations

import logging

import pytest

from claudecode_model.exceptions import ClaudeCodeError
from claudecode_model.tavily import ExtractFailure, TavilyAPIError, TavilyErrorType
from claudecode_model.tavily._validation import (
    check_urls,
    validate_max_results,
    validate_max_tokens,
    validate_query,
    validate_search_depth,
)


def assert_validation_error(error: TavilyAPIError, fragment: str) -> None:
    assert error.error_type is TavilyErrorType.VALIDATION_ERROR
    assert fragment in error.message
    assert str(error) == f"Tavily API エラー: {error.message}\nエラータイプ: VALIDATION_ERROR"
    assert isinstance(error, ClaudeCodeError)


# --- query: required, no empty string, at most 1000 characters


@pytest.mark.parametrize("query", ["", " ", "\t\n ", "\u3000"])
def test_empty_or_blank_query_is_rejected(query: str) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        validate_query(query)
    assert_validation_error(caught.value, "must not be empty")


def test_query_of_1000_characters_is_accepted_and_1001_rejected() -> None:
    assert validate_query("a" * 1000) == "a" * 1000
    with pytest.raises(TavilyAPIError) as caught:
        validate_query("a" * 1001)
    assert_validation_error(caught.value, "1001 characters (at most 1000)")


def test_query_is_stripped() -> None:
    assert validate_query("  pydantic ai \n") == "pydantic ai"


def test_query_must_be_a_string() -> None:
    with pytest.raises(TavilyAPIError) as caught:
        validate_query(42)
    assert_validation_error(caught.value, "must be a string")


# --- search_depth: "basic" or "advanced"


@pytest.mark.parametrize("depth", ["basic", "advanced"])
def test_search_depth_enum_accepts_basic_and_advanced(depth: str) -> None:
    assert validate_search_depth(depth) == depth


@pytest.mark.parametrize("depth", ["fast", "Basic", "", None, 1])
def test_search_depth_outside_the_enum_is_rejected(depth: object) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        validate_search_depth(depth)
    assert_validation_error(caught.value, "search_depth must be 'basic' or 'advanced'")


# --- max_results: 1..20


@pytest.mark.parametrize("count", [1, 5, 20])
def test_max_results_within_bounds(count: int) -> None:
    assert validate_max_results(count) == count


@pytest.mark.parametrize("count", [0, 21, -1, True, 5.0, "5", None])
def test_max_results_out_of_bounds_or_not_an_integer(count: object) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        validate_max_results(count)
    assert_validation_error(caught.value, "max_results must be an integer from 1 to 20")


# --- max_tokens: >= 1 or None


@pytest.mark.parametrize("budget", [None, 1, 4000])
def test_max_tokens_accepts_none_and_positive(budget: int | None) -> None:
    assert validate_max_tokens(budget) == budget


@pytest.mark.parametrize("budget", [0, -10, True, 1.5, "100"])
def test_max_tokens_below_one_or_not_an_integer(budget: object) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        validate_max_tokens(budget)
    assert_validation_error(caught.value, "max_tokens must be an integer >= 1 or null")


# --- URLs: the table of section 3.3


def test_empty_url_list_raises_at_once() -> None:
    with pytest.raises(TavilyAPIError) as caught:
        check_urls([])
    assert_validation_error(caught.value, "at least one URL")


def test_scheme_is_required() -> None:
    checked = check_urls(["https://example.com", "example.com"])
    assert checked.valid == ["https://example.com"]
    assert checked.invalid == [
        ExtractFailure("example.com", "invalid URL: missing scheme (http:// or https:// required)")
    ]


@pytest.mark.parametrize("url", ["ftp://example.com/file", "file:///etc/passwd", "javascript://x"])
def test_only_http_and_https_schemes(url: str) -> None:
    checked = check_urls([url])
    assert checked.valid == []
    assert "unsupported scheme" in checked.invalid[0].error


def test_http_is_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="claudecode_model.tavily"):
        checked = check_urls(["http://example.com", "https://example.org"])
    assert checked.valid == ["http://example.com", "https://example.org"]
    assert checked.invalid == []
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "http://example.com" in warnings[0].getMessage()
    assert "https:// is recommended" in warnings[0].getMessage()


def test_host_name_is_required() -> None:
    checked = check_urls(["https:///path", "https://example.com/path"])
    assert checked.valid == ["https://example.com/path"]
    assert checked.invalid == [ExtractFailure("https:///path", "invalid URL: missing host name")]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://exa mple.com", "contains whitespace"),
        ("https://-bad-.com", "invalid host name"),
        ("https://a..b.com", "invalid host name"),
        ("https://example.com:99999/", "invalid URL"),
        ("http://[::1", "invalid URL"),
        ("", "empty URL"),
    ],
)
def test_malformed_urls_are_recorded_with_a_reason(url: str, reason: str) -> None:
    checked = check_urls([url, "https://ok.example"])
    assert checked.valid == ["https://ok.example"]
    assert len(checked.invalid) == 1
    assert reason in checked.invalid[0].error


@pytest.mark.parametrize(
    "url",
    [
        "https://例え.jp/ページ",
        "https://[::1]:8080/x",
        "http://127.0.0.1:3000",
        "https://localhost",
        "https://a.b.c.",
    ],
)
def test_unusual_but_valid_hosts(url: str) -> None:
    assert check_urls([url]).valid == [url]


def test_twenty_urls_are_accepted_and_twenty_one_rejected() -> None:
    urls = [f"https://example.com/{n}" for n in range(21)]
    assert check_urls(urls[:20]).valid == urls[:20]
    with pytest.raises(TavilyAPIError) as caught:
        check_urls(urls)
    assert_validation_error(caught.value, "too many URLs: 21 (at most 20 per call)")


def test_duplicates_are_merged_keeping_the_first_position() -> None:
    checked = check_urls(
        ["https://b.example", "https://a.example", " https://b.example ", "nope", "https://a.example", "nope"]
    )
    assert checked.valid == ["https://b.example", "https://a.example"]
    assert [failure.url for failure in checked.invalid] == ["nope"]


def test_all_invalid_urls_leave_nothing_to_send() -> None:
    checked = check_urls(["example.com", "https:///x"])
    assert checked.valid == []
    assert [failure.url for failure in checked.invalid] == ["example.com", "https:///x"]


@pytest.mark.parametrize("urls", ["https://example.com", ["https://example.com", 3], None])
def test_urls_must_be_a_list_of_strings(urls: object) -> None:
    with pytest.raises(TavilyAPIError) as caught:
        check_urls(urls)
    assert_validation_error(caught.value, "list of URL strings")
