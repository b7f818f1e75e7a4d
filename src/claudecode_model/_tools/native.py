"""pydantic-ai's native tools as Claude Code's built-in tools: ``WebSearchTool`` → ``WebSearch``, ``WebFetchTool`` →
``WebFetch``, and ``MCPServerTool`` → a remote (HTTP) MCP server of the CLI.

A request whose parameters carry one of these native tools (from ``capabilities=[WebSearch()]`` or
``native_tools=[WebSearchTool()]``) enables the matching built-in tool of the CLI. Their domain filters are enforced
by a ``PreToolUse`` hook: a web search gets the allowed or blocked domains written into its input (the CLI passes
them to the API's web search), and a fetch of a URL outside the allowed domains (or inside a blocked one) is denied
with the reason. ``max_uses`` cannot be enforced by the CLI and is reported as unsupported, so pydantic-ai uses the
tool's local fallback or refuses the request, as it does for any model that cannot apply a restricting setting.

An ``MCPServerTool`` becomes an HTTP MCP server the CLI connects to itself (``url``, ``authorization_token`` as a
bearer token, ``headers``); only its ``allowed_tools`` (or all its tools) are allowed.

The calls come back as native tool parts named as Anthropic's own model names them (``web_search``, ``web_fetch``,
``mcp_server:<id>``); the CLI's name stays in ``provider_details``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic_ai.exceptions import UserError
from pydantic_ai.native_tools import AbstractNativeTool, MCPServerTool, WebFetchTool, WebSearchTool

from claudecode_model._tools.hook_output import deny, pre_tool_use

if TYPE_CHECKING:  # claude-agent-sdk loads with the first request (creating a model reads the supported tools)
    from claude_agent_sdk import HookMatcher
    from claude_agent_sdk.types import HookCallback, HookContext, HookInput, HookJSONOutput, McpHttpServerConfig

__all__ = [
    "NO_COUNTERPART",
    "SUPPORTED_NATIVE_TOOLS",
    "NativeToolPlan",
    "native_tool_reasons",
    "plan_native_tools",
    "unsupported_native_tool_settings",
]

logger = logging.getLogger(__name__)

_CLI_TOOLS: dict[type[AbstractNativeTool], str] = {WebSearchTool: "WebSearch", WebFetchTool: "WebFetch"}

SUPPORTED_NATIVE_TOOLS: frozenset[type[AbstractNativeTool]] = frozenset({*_CLI_TOOLS, MCPServerTool})
"""The native tool types that have a Claude Code built-in counterpart."""

_UNENFORCEABLE = frozenset({"max_uses", "external_web_access"})

NO_COUNTERPART: dict[str, str] = {
    "CodeExecutionTool": (
        "Claude Code has no counterpart of the API's sandboxed code execution: its Bash tool runs commands on this "
        "machine with the CLI's permissions. Enable it on purpose (claude_code_builtin_tools=['Bash'], with "
        "claude_code_sandbox), or give the agent a tool of its own."
    ),
    "MemoryTool": (
        "Claude Code has no counterpart of the API's memory tool (a /memories folder the application stores): its "
        "memory is CLAUDE.md files, which this library does not load. Give the agent memory tools of its own."
    ),
    "ToolSearchTool": (
        "Claude Code's tool search defers MCP tools by its own rules, and this library offers the agent's tools "
        "directly. Use the ToolSearch capability's local strategy."
    ),
}
"""pydantic-ai's native tools with no Claude Code counterpart, and why: the reason pydantic-ai's refusal carries."""


@contextmanager
def native_tool_reasons(native_tools: Sequence[AbstractNativeTool]) -> Iterator[None]:
    """Add the reason to pydantic-ai's refusal of a request with a native tool of :data:`NO_COUNTERPART`."""
    try:
        yield
    except UserError as error:
        names = sorted({type(tool).__name__ for tool in native_tools} & NO_COUNTERPART.keys())
        if not names or "not supported by this model" not in str(error):
            raise
        reasons = " ".join(f"{name}: {NO_COUNTERPART[name]}" for name in names)
        raise UserError(f"{error} {reasons}") from error


def unsupported_native_tool_settings(native_tool: AbstractNativeTool) -> frozenset[str]:
    """The restricting settings of ``native_tool`` that Claude Code cannot apply (a call limit, cached-only search)."""
    return native_tool.restricting_settings & _UNENFORCEABLE


@dataclass
class NativeToolPlan:
    """What the native tools of a request add to the CLI's options."""

    builtin_tools: list[str] = field(default_factory=list)
    """Claude Code built-in tools to enable and allow."""
    display_names: dict[str, str] = field(default_factory=dict)
    """CLI tool name → the native tool kind its calls are reported as."""
    search_domains: tuple[tuple[str, ...] | None, tuple[str, ...] | None] = (None, None)
    """``(allowed, blocked)`` domains every web search is held to."""
    fetch_domains: tuple[tuple[str, ...] | None, tuple[str, ...] | None] = (None, None)
    """``(allowed, blocked)`` domains every fetched URL is held to."""
    mcp_servers: dict[str, McpHttpServerConfig] = field(default_factory=dict)
    """Remote MCP servers by id."""
    allowed_tools: list[str] = field(default_factory=list)
    """Tool names (or ``mcp__<id>`` prefixes) of the remote MCP servers to allow."""
    mcp_prefixes: dict[str, str] = field(default_factory=dict)
    """``mcp__<id>__`` → the name its calls are reported under (``mcp_server:<id>``)."""

    @property
    def signature(self) -> list[Any]:
        """What fixes a CLI session's behaviour (sessions differing in it are not reused)."""
        servers = {name: dict(config) for name, config in sorted(self.mcp_servers.items())}
        return [sorted(self.builtin_tools), self.search_domains, self.fetch_domains, servers, self.allowed_tools]

    def display_name(self, cli_name: str) -> str | None:
        """The name a call of ``cli_name`` is reported under, if a native tool of the request made it available."""
        if cli_name in self.display_names:
            return self.display_names[cli_name]
        for prefix, name in self.mcp_prefixes.items():
            if cli_name.startswith(prefix):
                return name
        return None

    def hooks(self) -> dict[str, list[HookMatcher]]:
        """``PreToolUse`` hooks enforcing the domain filters (none when there are none)."""
        from claude_agent_sdk import HookMatcher

        matchers: list[HookMatcher] = []
        if self.search_domains != (None, None):
            matchers.append(HookMatcher(matcher="WebSearch", hooks=[_search_hook(*self.search_domains)]))
        if self.fetch_domains != (None, None):
            matchers.append(HookMatcher(matcher="WebFetch", hooks=[_fetch_hook(*self.fetch_domains)]))
        return {"PreToolUse": matchers} if matchers else {}


def plan_native_tools(
    native_tools: Sequence[AbstractNativeTool], *, reserved_servers: Sequence[str] = ()
) -> NativeToolPlan:
    """The built-in tools, servers and hooks for a request's native tools (only supported ones reach a request).

    ``reserved_servers`` are MCP server names the model uses itself; an ``MCPServerTool`` may not take one.
    """
    plan = NativeToolPlan()
    for tool in native_tools:
        if isinstance(tool, MCPServerTool):
            _add_mcp_server(plan, tool, reserved_servers)
            continue
        cli_name = _CLI_TOOLS.get(type(tool))
        if cli_name is None:
            logger.debug("native tool %s has no Claude Code counterpart; ignored", type(tool).__name__)
            continue
        if cli_name not in plan.builtin_tools:
            plan.builtin_tools.append(cli_name)
        plan.display_names[cli_name] = tool.kind
        match tool:
            case WebSearchTool():
                plan.search_domains = _domains(tool.allowed_domains, tool.blocked_domains)
            case WebFetchTool():
                plan.fetch_domains = _domains(tool.allowed_domains, tool.blocked_domains)
            case _:
                pass
    return plan


def _add_mcp_server(plan: NativeToolPlan, tool: MCPServerTool, reserved: Sequence[str]) -> None:
    if tool.id in reserved or tool.id in plan.mcp_servers:
        raise UserError(f"MCPServerTool id {tool.id!r} is taken: give each MCP server its own id (not {reserved!r})")
    if not tool.url.startswith(("http://", "https://")):
        raise UserError(f"MCPServerTool {tool.id!r}: Claude Code reaches MCP servers over http(s), not {tool.url!r}")
    headers = dict(tool.headers or {})
    if tool.authorization_token:
        headers["Authorization"] = f"Bearer {tool.authorization_token}"
    config: McpHttpServerConfig = {"type": "http", "url": tool.url}
    if headers:
        config["headers"] = headers
    plan.mcp_servers[tool.id] = config
    prefix = f"mcp__{tool.id}__"
    plan.mcp_prefixes[prefix] = f"{tool.kind}:{tool.id}"
    if tool.allowed_tools is None:
        plan.allowed_tools.append(f"mcp__{tool.id}")
    else:
        plan.allowed_tools += [f"{prefix}{name}" for name in tool.allowed_tools]


def _domains(
    allowed: Sequence[str] | None, blocked: Sequence[str] | None
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    return (
        tuple(_normal(domain) for domain in allowed) if allowed is not None else None,
        tuple(_normal(domain) for domain in blocked) if blocked is not None else None,
    )


def _normal(domain: str) -> str:
    return domain.strip().lower().removeprefix("*.").rstrip(".")


def _within(host: str, domains: Sequence[str]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == domain or host.endswith(f".{domain}") for domain in domains)


def _search_input(
    tool_input: Mapping[str, Any], allowed: tuple[str, ...] | None, blocked: tuple[str, ...] | None
) -> dict[str, Any]:
    """The search input held to the filters (the API takes either allowed or blocked domains, not both)."""
    updated = dict(tool_input)
    asked_allowed = [_normal(str(d)) for d in updated.pop("allowed_domains", None) or []]
    asked_blocked = [_normal(str(d)) for d in updated.pop("blocked_domains", None) or []]
    if allowed is not None:
        narrowed = [d for d in asked_allowed if _within(d, allowed)] or list(allowed)
        if blocked is not None or asked_blocked:
            narrowed = [d for d in narrowed if not _within(d, (*(blocked or ()), *asked_blocked))]
        updated["allowed_domains"] = narrowed
    elif asked_allowed:
        updated["allowed_domains"] = [d for d in asked_allowed if not _within(d, blocked or ())]
    else:
        updated["blocked_domains"] = sorted({*(blocked or ()), *asked_blocked})
    return updated


def _search_hook(allowed: tuple[str, ...] | None, blocked: tuple[str, ...] | None) -> HookCallback:
    async def hold_to_domains(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if hook_input["hook_event_name"] != "PreToolUse":
            return {}
        updated = _search_input(hook_input["tool_input"], allowed, blocked)
        if updated.get("allowed_domains") == []:
            return _deny("none of the domains this search may use is left (the agent's web search domain filter)")
        return pre_tool_use(updated_input=updated)

    return hold_to_domains


def _fetch_hook(allowed: tuple[str, ...] | None, blocked: tuple[str, ...] | None) -> HookCallback:
    async def check_domain(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if hook_input["hook_event_name"] != "PreToolUse":
            return {}
        host = urlsplit(str(hook_input["tool_input"].get("url", ""))).hostname or ""
        if allowed is not None and not _within(host, allowed):
            return _deny(f"{host or 'this URL'} is not among the domains this agent may fetch: {', '.join(allowed)}")
        if blocked is not None and _within(host, blocked):
            return _deny(f"{host} is a domain this agent may not fetch")
        return {}

    return check_domain


def _deny(reason: str) -> HookJSONOutput:
    logger.info("denied a web tool call: %s", reason)
    return deny(reason)
