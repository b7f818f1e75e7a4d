"""Per-request settings of :class:`~claudecode_model.ClaudeCodeModel`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.messages import ToolCallPart
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolApproved, ToolDenied
from typing_extensions import TypedDict  # pydantic validates these settings: on Python 3.11 it needs this one

if TYPE_CHECKING:  # claude-agent-sdk is imported at the first request (or when one of these settings is checked)
    from claude_agent_sdk.types import HookEvent, HookMatcher, SandboxSettings

__all__ = [
    "BuiltinToolPolicy",
    "BuiltinToolsSetting",
    "ClaudeCodeModelSettings",
    "PolicyDecision",
    "SessionMode",
    "SubagentDefinition",
]

BuiltinToolsSetting = list[str] | Literal["claude_code"]
"""Claude Code's own tools to enable: a list of names (``["Read", "Grep"]``) or ``"claude_code"`` for the preset."""

PolicyDecision = ToolApproved | ToolDenied | bool | None
"""What a built-in tool policy says of a call: approve (``True``, or ``ToolApproved(override_args=...)`` to run it
with other input), deny (``False``, or ``ToolDenied(message)``: Claude gets the message), or ``None``: no decision
(pydantic-ai's approval decides if the tool is in a ``BuiltinToolApprovals`` toolset, else Claude Code's own
permission rules)."""

BuiltinToolPolicy = Callable[[ToolCallPart], PolicyDecision]
"""A synchronous decision on each call of a Claude Code built-in tool, given as a ``ToolCallPart`` (tool name, input,
``tool_use`` id)."""

SessionMode = Literal["auto", "new"]
"""``"auto"`` continues a CLI session when the history allows it; ``"new"`` always starts a fresh one."""


class _SubagentRequired(TypedDict):
    description: str
    """When Claude should use this subagent (Claude reads it to choose one)."""
    prompt: str
    """The subagent's system prompt."""


class SubagentDefinition(_SubagentRequired, total=False):
    """A Claude Code subagent, which Claude starts with its ``Agent`` tool (see ``claude_code_agents``)."""

    tools: list[str]
    """The tools the subagent may use (built-in names, ``mcp__<server>__<tool>``); all of the session's by default.
    A subagent only gets tools of its session: the listed built-in tools are enabled for the session too (Claude sees
    them as well), and all listed tools are allowed without asking."""
    disallowed_tools: list[str]
    """Tools the subagent may not use."""
    model: str
    """``"sonnet"``, ``"opus"``, ``"haiku"``, ``"inherit"`` or a full model id; the session's model by default."""
    max_turns: int
    """Maximum agentic turns of one subagent run."""


class ClaudeCodeModelSettings(ModelSettings, total=False):
    """Settings for a Claude Code request; every key is optional and provider-prefixed.

    Standard :class:`~pydantic_ai.settings.ModelSettings` keys that the CLI can honour are honoured:
    ``max_tokens`` (``CLAUDE_CODE_MAX_OUTPUT_TOKENS``), ``max_retries`` (``CLAUDE_CODE_MAX_RETRIES``), ``timeout``
    (a deadline for the whole CLI turn), ``thinking``; pydantic-ai's ``request_timeout`` and ``first_event_timeout``
    stop the CLI turn as for any model. The CLI has no flags for ``temperature``, ``top_p``, ``top_k``, ``seed``,
    ``stop_sequences``, penalties, ``logit_bias``, ``parallel_tool_calls``, ``extra_headers``, ``extra_body`` or
    ``service_tier``: ``ClaudeCodeModel.unsupported_settings`` declares them, and each one set warns
    (``UnsupportedSettingWarning``). ``tool_choice`` and ``cache`` are honoured as far as the CLI can; see
    ``docs/settings-parity.md`` for every setting.
    """

    claude_code_timeout: float
    """Seconds the whole CLI turn may take; on expiry the CLI is stopped and ``CLITimeoutError`` raised."""

    claude_code_inactivity_timeout: float | None
    """Seconds the CLI may send nothing while no tool runs before the turn is stopped with
    ``ClaudeCodeInactivityError`` (default 360: above the CLI's own longest silent wait of one API attempt, see
    ``docs/reliability.md``); ``None`` turns the bound off. The CLI's own per-attempt API timeouts are set below it."""

    claude_code_limit_reset_wait: float
    """Seconds a request may wait, in all, for a usage limit of the subscription to reset (the 5-hour or weekly limit)
    before it asks again; default ``0``: no waiting, ``ClaudeCodeRateLimitError`` is raised with ``resets_at`` and
    ``retry_after``. A WARNING says until when. Requests that do not stream (``agent.run()``), DBOS steps included."""

    claude_code_max_turns: int
    """Maximum agentic turns (API round trips) the CLI may take for one request."""

    claude_code_max_budget_usd: float
    """Cost ceiling for one request, enforced by the CLI."""

    claude_code_cwd: str | Path
    """Working directory of the CLI process."""

    claude_code_permission_mode: Literal["default", "acceptEdits", "plan", "dontAsk", "auto"]
    """Permission mode; the default ``"dontAsk"`` denies every tool not explicitly allowed, and never prompts."""

    claude_code_allowed_tools: list[str]
    """Extra tool names (or ``mcp__server`` prefixes) that are allowed without asking."""

    claude_code_disallowed_tools: list[str]
    """Tool names that are always denied."""

    claude_code_builtin_tools: BuiltinToolsSetting
    """Claude Code built-in tools to enable. None are enabled unless this is set."""

    claude_code_builtin_tool_policy: BuiltinToolPolicy
    """Decides each call of a built-in tool in code, before it runs (see ``docs/builtin-tools.md``); called once per
    call, on the event loop (in the CLI session's task or the request's): keep it quick."""

    claude_code_tool_parameter_restrictions: dict[str, dict[str, Any]]
    """Forbidden argument values per tool, e.g. ``{"Bash": {"run_in_background": True}}``.

    A value may also be a predicate (``lambda command: "rm " in command``) that returns ``True`` when forbidden.
    Keys are built-in tool names, or the agent's tool names. Every call is checked (by a ``PreToolUse`` hook, so
    even calls allowed without asking); a forbidden call is denied and Claude is told which argument was refused.
    """

    claude_code_system_prompt_append: str
    """Text appended to the system prompt built from the agent's system prompts and instructions."""

    claude_code_thinking: Literal["adaptive", "disabled"] | int
    """Thinking: ``"adaptive"``, ``"disabled"`` or a token budget. Overrides the unified ``thinking`` setting."""

    claude_code_effort: Literal["low", "medium", "high", "xhigh", "max"]
    """Effort level passed to the CLI."""

    claude_code_extra_args: dict[str, str | None]
    """Extra CLI flags (``{"flag": "value"}`` or ``{"flag": None}`` for a bare flag)."""

    claude_code_env: dict[str, str]
    """Extra environment variables for the CLI process."""

    claude_code_setting_sources: list[Literal["user", "project", "local"]]
    """Which Claude Code settings files (and CLAUDE.md, hooks, .mcp.json) to load; none by default."""

    claude_code_interpret_prompts: bool
    """Let Claude Code interpret the text it is sent (default ``False``: every prompt, history and queued message
    reaches Claude exactly as written). ``True`` turns on what the CLI does to typed input: ``@path`` mentions
    expanded into file contents, ``/command`` slash commands run. Only for text you trust."""

    claude_code_session: SessionMode
    """Whether to continue a CLI session the history came from (``"auto"``) or always start anew."""

    claude_code_agents: dict[str, SubagentDefinition]
    """Claude Code subagents by name. Claude gets the ``Agent`` tool to start them; each runs in the foreground of
    the turn, and its tool calls come back as native tool parts linked to the ``Agent`` call."""

    claude_code_tool_execution: Literal["agent", "cli"]
    """Who runs the agent's own tools: pydantic-ai (``"agent"``, the default: each Claude reply that calls tools is
    one model request, and pydantic-ai's approvals, deferred calls, retries, events, limits and traces apply) or Claude
    Code's loop (``"cli"``: one model request per turn, tools reported as built-in). See ``docs/tool-execution.md``."""

    claude_code_hooks: dict[HookEvent, list[HookMatcher]]
    """Your own Claude Code hooks (``PreToolUse``, ``PostToolUse``, ...), as claude-agent-sdk's ``HookMatcher`` s.
    They run beside the library's own hooks (tool parameter restrictions, native tool filters, built-in tool
    approvals), which come first; when several ``PreToolUse`` hooks decide, Claude Code lets a denial win."""

    claude_code_fallback_model: str
    """The model Claude Code switches to when the main model is overloaded (``--fallback-model``)."""

    claude_code_add_dirs: list[str | Path]
    """More directories the built-in tools may work in, besides the working directory (``--add-dir``)."""

    claude_code_sandbox: SandboxSettings
    """Claude Code's sandbox for Bash commands (claude-agent-sdk's ``SandboxSettings``, e.g. ``{"enabled": True}``)."""

    claude_code_skills: list[str] | Literal["all"]
    """The skills Claude may use (names, ``plugin:skill`` for a plugin's, or ``"all"``), with the ``Skill`` tool;
    skills come from ``claude_code_plugins`` or the loaded setting sources."""

    claude_code_plugins: list[str | Path]
    """Directories of local Claude Code plugins to load (commands, agents, skills, hooks)."""

    claude_code_betas: list[str]
    """Anthropic API beta headers Claude Code sends (``--betas``), e.g. ``["context-1m-2025-08-07"]``."""

    claude_code_task_budget: int
    """A token budget for the task that Claude is told about, to pace itself (``--task-budget``)."""

    claude_code_compaction: bool
    """Let Claude Code compact the conversation when its context window fills (default ``False``: it never does,
    and a request over the window raises ``ClaudeCodeContextWindowExceededError``, as on ``AnthropicModel``). When
    it compacts, Claude sees a summary of the earlier messages while pydantic-ai's history still holds them all: the
    response's ``provider_details["compacted"]`` says so, and a line is logged at INFO."""

    claude_code_auth: Literal["auto", "subscription", "api_key"]
    """Which credential the CLI bills. ``"auto"`` (the default): Claude Code's own choice, an API key in the
    environment (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``) before the subscription login, with a one-time
    WARNING when both are present. ``"subscription"``: an inherited key is kept away from the CLI, so the login
    bills. ``"api_key"``: a key must be set (``ClaudeCodeSettingsError`` otherwise)."""
