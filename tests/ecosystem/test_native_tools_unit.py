"""The mapping of pydantic-ai's native tools to Claude Code options: tools, servers, filters and hooks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai.exceptions import UserError
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.native_tools import (
    NATIVE_TOOL_TYPES,
    AbstractNativeTool,
    CodeExecutionTool,
    MCPServerTool,
    MemoryTool,
    WebFetchTool,
    WebSearchTool,
)

from claudecode_model import ClaudeCodeModel
from claudecode_model._tools.native import plan_native_tools, unsupported_native_tool_settings


def _run_hook(plan: Any, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    [matcher] = [m for m in plan.hooks()["PreToolUse"] if m.matcher == tool_name]
    [hook] = matcher.hooks
    hook_input = {"hook_event_name": "PreToolUse", "tool_name": tool_name, "tool_input": tool_input}
    result: dict[str, Any] = asyncio.run(hook(hook_input, "toolu_1", {"signal": None}))
    return result


def test_web_tools_become_builtin_tools_reported_by_kind():
    plan = plan_native_tools([WebSearchTool(), WebFetchTool()])

    assert plan.builtin_tools == ["WebSearch", "WebFetch"]
    assert plan.display_name("WebSearch") == "web_search"
    assert plan.display_name("WebFetch") == "web_fetch"
    assert plan.display_name("Read") is None
    assert plan.hooks() == {}  # no filters, no hooks


@pytest.mark.parametrize(
    ("tool", "asked", "sent"),
    [
        (WebSearchTool(allowed_domains=["pydantic.dev"]), {}, {"allowed_domains": ["pydantic.dev"]}),
        (
            WebSearchTool(allowed_domains=["pydantic.dev"]),
            {"allowed_domains": ["docs.pydantic.dev", "evil.example"]},
            {"allowed_domains": ["docs.pydantic.dev"]},
        ),
        (
            WebSearchTool(blocked_domains=["spam.example"]),
            {"blocked_domains": ["other.example"]},
            {"blocked_domains": ["other.example", "spam.example"]},
        ),
        (
            WebSearchTool(blocked_domains=["spam.example"]),
            {"allowed_domains": ["ok.example", "www.spam.example"]},
            {"allowed_domains": ["ok.example"]},
        ),
    ],
)
def test_search_input_is_held_to_the_domain_filters(tool: WebSearchTool, asked: dict[str, Any], sent: dict[str, Any]):
    plan = plan_native_tools([tool])

    result = _run_hook(plan, "WebSearch", {"query": "q", **asked})

    assert result["hookSpecificOutput"]["updatedInput"] == {"query": "q", **sent}


def test_a_search_left_without_allowed_domains_is_denied():
    plan = plan_native_tools([WebSearchTool(allowed_domains=["a.example"], blocked_domains=["a.example"])])

    result = _run_hook(plan, "WebSearch", {"query": "q"})

    assert result["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    ("url", "denied"),
    [
        ("https://pydantic.dev/x", False),
        ("https://docs.pydantic.dev/x", False),
        ("https://notpydantic.dev/x", True),
        ("https://blocked.pydantic.dev/x", True),
        ("not a url", True),
    ],
)
def test_fetch_urls_are_checked_against_the_domains(url: str, denied: bool):
    plan = plan_native_tools([WebFetchTool(allowed_domains=["pydantic.dev"], blocked_domains=["blocked.pydantic.dev"])])

    result = _run_hook(plan, "WebFetch", {"url": url, "prompt": "p"})

    assert (result.get("hookSpecificOutput", {}).get("permissionDecision") == "deny") is denied


def test_max_uses_and_cached_only_search_are_unsupported():
    assert unsupported_native_tool_settings(WebSearchTool(max_uses=3)) == {"max_uses"}
    assert unsupported_native_tool_settings(WebSearchTool(external_web_access=False)) == {"external_web_access"}
    assert unsupported_native_tool_settings(WebFetchTool(max_uses=1, allowed_domains=["a.b"])) == {"max_uses"}
    assert unsupported_native_tool_settings(WebSearchTool(allowed_domains=["a.b"])) == frozenset()


def test_mcp_server_tool_becomes_a_remote_server():
    tool = MCPServerTool(
        id="docs", url="https://mcp.example/mcp", authorization_token="t0k", headers={"X-A": "1"}, allowed_tools=["a"]
    )

    plan = plan_native_tools([tool], reserved_servers=("pydantic_tools",))

    assert plan.mcp_servers == {
        "docs": {
            "type": "http",
            "url": "https://mcp.example/mcp",
            "headers": {"X-A": "1", "Authorization": "Bearer t0k"},
        }
    }
    assert plan.allowed_tools == ["mcp__docs__a"]
    assert plan.display_name("mcp__docs__a") == "mcp_server:docs"
    assert plan.display_name("mcp__pydantic_tools__a") is None
    assert plan_native_tools([MCPServerTool(id="all", url="http://127.0.0.1:1/mcp")]).allowed_tools == ["mcp__all"]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([MCPServerTool(id="pydantic_tools", url="https://x.example")], "is taken"),
        ([MCPServerTool(id="a", url="https://x.example"), MCPServerTool(id="a", url="https://y.example")], "is taken"),
        ([MCPServerTool(id="a", url="x-openai-connector:abc")], "over http"),
    ],
)
def test_bad_mcp_server_tools_are_refused(tools: list[MCPServerTool], message: str):
    with pytest.raises(UserError, match=message):
        plan_native_tools(tools, reserved_servers=("pydantic_tools",))


def test_tools_without_a_counterpart_add_nothing():
    plan = plan_native_tools([CodeExecutionTool()])

    assert (plan.builtin_tools, plan.mcp_servers, plan.hooks()) == ([], {}, {})


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        (CodeExecutionTool(), "runs commands on this machine"),
        (MemoryTool(), "no counterpart of the API's memory tool"),
        (NATIVE_TOOL_TYPES["tool_search"](), "ToolSearch capability's local strategy"),
    ],
)
def test_native_tools_without_a_counterpart_are_refused_with_the_reason(tool: AbstractNativeTool, reason: str):
    model = ClaudeCodeModel()
    with pytest.raises(UserError, match="not supported by this model") as raised:
        model.prepare_request(None, ModelRequestParameters(native_tools=[tool]))

    assert reason in str(raised.value)


def test_max_uses_is_refused_before_anything_starts():
    model = ClaudeCodeModel()
    with pytest.raises(UserError, match="max_uses"):
        model.prepare_request(None, ModelRequestParameters(native_tools=[WebSearchTool(max_uses=2)]))
