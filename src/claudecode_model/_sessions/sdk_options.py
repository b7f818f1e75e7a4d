"""Every field of claude-agent-sdk's ``ClaudeAgentOptions`` and what this library does with it.

The SDK adds options every few releases. ``tests/model/test_sdk_options_coverage.py`` fails when the installed SDK's
``ClaudeAgentOptions`` has a field this table does not name (or names one it no longer has), so each upgrade is a
decision: map the new option to a setting, set it internally, or list it here as deliberately not exposed, with why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SDK_OPTIONS", "Exposed", "Internal", "NotExposed", "OptionUse"]


@dataclass(frozen=True)
class Exposed:
    """Set from what the user passes: a ``claude_code_*`` setting or a ``ClaudeCodeModel`` argument (``via``)."""

    via: tuple[str, ...]


@dataclass(frozen=True)
class Internal:
    """Set by the library itself, for the reason given."""

    why: str


@dataclass(frozen=True)
class NotExposed:
    """Left at the SDK's default on purpose, for the reason given."""

    why: str


OptionUse = Exposed | Internal | NotExposed

SDK_OPTIONS: Mapping[str, OptionUse] = {
    "tools": Exposed(("claude_code_builtin_tools",)),
    "allowed_tools": Exposed(("claude_code_allowed_tools",)),
    "disallowed_tools": Exposed(("claude_code_disallowed_tools",)),
    "system_prompt": Internal(
        "the agent's system prompts and instructions, plus claude_code_system_prompt_append, never snapshotted (a "
        "resumed session gets the request's own); a long one through a file (--system-prompt-file)"
    ),
    "mcp_servers": Internal("the agent's tools (pydantic_tools) and MCPServerTool remote servers"),
    "strict_mcp_config": Internal("always on: no .mcp.json of the user or the project is loaded"),
    "permission_mode": Exposed(("claude_code_permission_mode",)),
    "continue_conversation": NotExposed(
        "a session is chosen from the message history (continue, resume, fork or replay), never as 'the most recent "
        "session of this directory', which another program may have written"
    ),
    "resume": Internal("the session plan: a stored or replayed transcript is resumed"),
    "session_id": Internal("forks and replays name the new session"),
    "fork_session": Internal("the session plan: a history that ends before its session's last turn is forked"),
    "resume_session_at": Internal("the session plan: the fork point is the history's last response"),
    "resume_drops_turn": NotExposed(
        "a fork point is always an assistant entry the history ended on, so no prompt turn is dropped"
    ),
    "max_turns": Exposed(("claude_code_max_turns",)),
    "max_budget_usd": Exposed(("claude_code_max_budget_usd",)),
    "model": Exposed(("model_name",)),
    "fallback_model": Exposed(("claude_code_fallback_model",)),
    "betas": Exposed(("claude_code_betas",)),
    "permission_prompt_tool_name": NotExposed(
        "the CLI never prompts (dontAsk by default); approvals go through pydantic-ai's deferred tool calls"
    ),
    "cwd": Exposed(("claude_code_cwd",)),
    "cli_path": Exposed(("cli_path",)),
    "settings": NotExposed(
        "filesystem settings load through claude_code_setting_sources; a settings file stays reachable through "
        "claude_code_extra_args ({'settings': path})"
    ),
    "add_dirs": Exposed(("claude_code_add_dirs",)),
    "env": Exposed(("env", "claude_code_env")),
    "extra_args": Exposed(("claude_code_extra_args",)),
    "max_buffer_size": Internal("64 MiB (the SDK's 1 MiB default cut off a 1 MB tool argument)"),
    "debug_stderr": NotExposed("deprecated by the SDK and no longer read; stderr is collected through 'stderr'"),
    "stderr": Internal("collected per session for CLIProcessError and the logs"),
    "can_use_tool": Internal("the approval gate of built-in tool calls (BuiltinToolApprovals, the tool policy)"),
    "hooks": Exposed(("claude_code_hooks",)),  # beside the library's own: restrictions, built-in approvals
    "user": NotExposed("an identifier the CLI does not send to the API; nothing in pydantic-ai maps to it"),
    "include_partial_messages": Internal("always on: true streaming of text, thinking and tool arguments"),
    "include_hook_events": NotExposed("hook lifecycle messages carry nothing a pydantic-ai event or part shows"),
    "forward_subagent_text": NotExposed(
        "a pydantic-ai response has no part for a subagent's intermediate text; its tool calls are reported"
    ),
    "verbatim_prompts": Exposed(("claude_code_interpret_prompts",)),
    "agents": Exposed(("claude_code_agents",)),
    "setting_sources": Exposed(("claude_code_setting_sources",)),
    "skills": Exposed(("claude_code_skills",)),
    "sandbox": Exposed(("claude_code_sandbox",)),
    "plugins": Exposed(("claude_code_plugins",)),
    "max_thinking_tokens": NotExposed("deprecated by the SDK; claude_code_thinking (or thinking) sets 'thinking'"),
    "thinking": Exposed(("claude_code_thinking", "thinking")),
    "effort": Exposed(("claude_code_effort",)),
    "output_format": Internal("native structured output: the output type's JSON schema"),
    "enable_file_checkpointing": NotExposed(
        "rewinding files needs ClaudeSDKClient.rewind_files(), which pydantic-ai has no call for"
    ),
    "session_store": Exposed(("session_store",)),
    "session_store_flush": Internal(
        "'eager' with a session store: a turn parked for tool results is in the store before it goes on elsewhere"
    ),
    "load_timeout_ms": NotExposed("the SDK's default (60 s); session_store_timeout bounds every store call first"),
    "task_budget": Exposed(("claude_code_task_budget",)),
    "client_app": NotExposed("the SDK's default User-Agent"),
}
