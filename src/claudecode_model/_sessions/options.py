"""Building ``ClaudeAgentOptions`` for one request from model defaults, settings and what the request needs."""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import CanUseTool, McpServerConfig, ThinkingConfig
from pydantic_ai.settings import ThinkingLevel

from claudecode_model._history.digest import canonical_digest
from claudecode_model._process.binary import cli_version_async
from claudecode_model._process.platform import guarded_cli_path
from claudecode_model._sessions.claim import parked_options
from claudecode_model._sessions.setting_table import (
    CLAIM_OPTIONS,
    direct_options,
    launch_settings,
    request_env,
    signed_settings,
)
from claudecode_model._sessions.subagents import SubagentOptions, subagent_options
from claudecode_model._tools.builtin_approvals import ApprovalPlan, cli_permission_mode
from claudecode_model._tools.execution import DEFAULT_PERMISSION_MODE
from claudecode_model._tools.native import NativeToolPlan
from claudecode_model._tools.restrictions import restriction_hooks
from claudecode_model.exceptions import ClaudeCodeSettingsError
from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = [
    "INLINE_OUTPUT_SCHEMA_CHARACTERS",
    "LITERAL_PROMPTS_VERSION",
    "MAX_CLI_MESSAGE_BYTES",
    "BuiltOptions",
    "RequestNeeds",
    "build_options",
    "effective_system_prompt",
    "launch_signature",
    "require_literal_prompts",
]

logger = logging.getLogger(__name__)

MAX_CLI_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message (one JSON line: a reply with its tool calls' arguments, a tool result) read from the CLI.
The SDK's own default is 1 MiB; a larger message ends the turn with ``CLIResponseParseError``."""


@dataclass
class RequestNeeds:
    """What a request adds on top of the settings: system prompt, tool servers, output schema, session."""

    system_prompt: str | None
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    mcp_tools_signature: list[list[Any]] | None = None
    """What the request's tool servers serve (``None``: no tool servers), part of the session signature."""
    allowed_tools: list[str] = field(default_factory=list)
    output_schema: dict[str, Any] | None = None
    resume: str | None = None
    can_use_tool: CanUseTool | None = None
    thinking: ThinkingLevel | None = None
    """pydantic-ai's unified ``thinking`` setting: ``prepare_request`` moves it from the settings to the parameters."""
    cache: object = None
    """pydantic-ai's unified ``cache`` setting, resolved by ``prepare_request`` (``params.cache``)."""
    native_tools: NativeToolPlan = field(default_factory=NativeToolPlan)
    """Built-in tools (and their hooks) standing in for the request's native tools."""
    approvals: ApprovalPlan = field(default_factory=ApprovalPlan)
    """Built-in tools whose calls wait for pydantic-ai's approval, and the policy deciding calls in code (its hook
    is added per CLI process: it waits on the process's call results)."""


INLINE_OUTPUT_SCHEMA_CHARACTERS = 8192
"""The longest output schema (characters of its JSON) passed on the CLI's command line (``--json-schema``); a longer
one reaches the CLI in its ``initialize`` request. Windows caps a whole command line at 32,767 characters, and that
is the design limit on every platform."""


def build_options(
    *,
    model_name: str | None,
    cli_path: Path,
    settings: ClaudeCodeModelSettings,
    needs: RequestNeeds,
    base_env: Mapping[str, str],
    stderr: Callable[[str], None],
) -> tuple[ClaudeAgentOptions, str]:
    """The SDK options for a request, and a signature of everything that fixes a CLI session's behaviour."""
    subagents = subagent_options(settings, settings.get("claude_code_builtin_tools"))
    tools, allowed = _tool_lists(settings, needs, subagents)
    thinking = _thinking(settings, needs.thinking)
    serves_tools = bool(needs.mcp_servers or needs.native_tools.mcp_servers) or needs.mcp_tools_signature is not None
    env = request_env(
        settings,
        {**subagents.env, **base_env},
        cache=needs.cache,
        serves_tools=serves_tools,
        thinking_disabled=thinking is not None and thinking["type"] == "disabled",
    )
    permission_mode = settings.get("claude_code_permission_mode", DEFAULT_PERMISSION_MODE)
    options = ClaudeAgentOptions(
        **direct_options(settings),
        tools=cast("Any", tools),
        allowed_tools=allowed,
        # Never recorded in the session's transcript: a resumed or forked session gets this request's prompt.
        system_prompt={
            "type": "custom",
            "prompt": effective_system_prompt(settings, needs.system_prompt) or "",
            "snapshot": False,
        },
        mcp_servers={**needs.native_tools.mcp_servers, **needs.mcp_servers},
        strict_mcp_config=True,
        permission_mode=cast(Any, cli_permission_mode(permission_mode, needs.approvals)),
        model=model_name,
        cli_path=guarded_cli_path(cli_path),  # the CLI dies with this process
        env=env,
        include_partial_messages=True,
        verbatim_prompts=not settings.get("claude_code_interpret_prompts", False),
        thinking=thinking,
        effort=_effort(settings, needs.thinking),
        output_format={"type": "json_schema", "schema": needs.output_schema} if needs.output_schema else None,
        resume=needs.resume,
        can_use_tool=needs.can_use_tool,
        hooks=cast(Any, _hooks(settings, needs.native_tools)),
        agents=subagents.agents,
        stderr=stderr,
        max_buffer_size=MAX_CLI_MESSAGE_BYTES,
    )
    return options, _signature(options, settings, needs, cli_path, subagents)


_UNSIGNED = {
    "cli_path": "the launcher wrapping the CLI; the CLI's own path is signed",
    "stderr": "a callback of each process",
    "can_use_tool": "the approval gate of each process; the approvals are signed",
    "hooks": "callables made anew per request; the settings they come from are signed",
    "mcp_servers": "servers of each process; what they serve is signed",
    "agents": "the SDK's definitions; signed as plain data",
    "debug_stderr": "deprecated by the SDK, never set",
}
"""``ClaudeAgentOptions`` fields left out of the session signature, and why (every other field is in it)."""


def _signature(
    options: ClaudeAgentOptions,
    settings: ClaudeCodeModelSettings,
    needs: RequestNeeds,
    cli_path: Path,
    subagents: SubagentOptions,
) -> str:
    """A digest of everything that fixes a CLI session's behaviour: the options, the settings that fix a session
    (:func:`~claudecode_model._sessions.setting_table.signed_settings`), the request's tools and the CLI."""
    fields = {item.name: getattr(options, item.name) for item in dataclasses.fields(options)}
    return canonical_digest(
        {
            "options": {name: value for name, value in fields.items() if name not in _UNSIGNED},
            "settings": signed_settings(settings),
            "mcp": needs.mcp_tools_signature,
            "native_tools": needs.native_tools.signature,
            "approvals": needs.approvals.signature,
            "agents": subagents.signature,
            "cli": str(cli_path),
        }
    )


def launch_signature(
    options: ClaudeAgentOptions, settings: ClaudeCodeModelSettings, needs: RequestNeeds, cli_path: Path
) -> str | None:
    """A digest of what a parked CLI (``--await-claim``) must be launched with to serve a session of ``options``:
    their signature without what a claim sets (:data:`~claudecode_model._sessions.setting_table.CLAIM_OPTIONS`, the
    in-process servers and the allow rules of their tools), as :func:`~claudecode_model._sessions.claim.
    parked_options` launches it (tool search off).

    ``None`` when no parked CLI can serve it: a tool server the CLI starts itself (the stdio bridge), settings read
    from the project folder (read where the CLI is launched) or extra command-line arguments.
    """
    servers = needs.mcp_tools_signature or []
    if any(transport != "sdk" for _kind, _name, transport, *_ in servers):
        return None
    if settings.get("claude_code_setting_sources") or settings.get("claude_code_extra_args"):
        return None
    subagents = subagent_options(settings, settings.get("claude_code_builtin_tools"))
    launched = parked_options(options, claimed_rules=needs.allowed_tools)
    fields = {item.name: getattr(launched, item.name) for item in dataclasses.fields(launched)}
    return canonical_digest(
        {
            "options": {name: value for name, value in fields.items() if name not in {*_UNSIGNED, *CLAIM_OPTIONS}},
            "settings": launch_settings(settings),
            "native_tools": needs.native_tools.signature,
            "approvals": needs.approvals.signature,
            "agents": subagents.signature,
            "cli": str(cli_path),
        }
    )


def _tool_lists(
    settings: ClaudeCodeModelSettings, needs: RequestNeeds, subagents: SubagentOptions
) -> tuple[list[str] | dict[str, str], list[str]]:
    """The built-in tools the CLI enables (a list, or the ``claude_code`` preset), and the tools allowed without
    asking."""
    builtin = settings.get("claude_code_builtin_tools")
    tools: list[str] | dict[str, str]
    builtin_names: list[str] = []
    if builtin == "claude_code":
        tools = {"type": "preset", "preset": "claude_code"}
    else:
        builtin_names = list(builtin or [])
        extra = [*needs.native_tools.builtin_tools, *subagents.builtin_tools, *needs.approvals.tools]
        if settings.get("claude_code_skills"):
            extra.append("Skill")  # the tool Claude uses a skill with
        builtin_names += [name for name in dict.fromkeys(extra) if name not in builtin_names]
        tools = builtin_names
    allowed = [*needs.allowed_tools, *builtin_names, *settings.get("claude_code_allowed_tools", [])]
    extra_allowed = [*needs.native_tools.builtin_tools, *needs.native_tools.allowed_tools, *subagents.allowed_tools]
    allowed += [name for name in dict.fromkeys(extra_allowed) if name not in allowed]
    # A tool under approval is never allowed by a rule: Claude Code asks the approval gate before every call.
    return tools, [rule for rule in allowed if _rule_tool(rule) not in needs.approvals.tools]


LITERAL_PROMPTS_VERSION = (2, 1, 248)
"""The first Claude Code that delivers a prompt as written when asked (``client_composed``)."""


async def require_literal_prompts(cli_path: Path, settings: ClaudeCodeModelSettings) -> None:
    """Unless ``settings`` let Claude Code interpret prompts, refuse a CLI known to expand ``@file`` mentions and run
    slash commands in every prompt it is sent (a CLI whose version cannot be learned is let through)."""
    if settings.get("claude_code_interpret_prompts", False):
        return
    version = await cli_version_async(cli_path)
    if version is not None and version < LITERAL_PROMPTS_VERSION:
        needed = ".".join(map(str, LITERAL_PROMPTS_VERSION))
        raise ClaudeCodeSettingsError(
            f"The Claude Code CLI at {cli_path} (version {'.'.join(map(str, version))}) would read files named "
            f"with @ in prompts and run slash commands: literal prompts need Claude Code {needed} or later. "
            "Update it (or use the CLI bundled with claude-agent-sdk), or set "
            "claude_code_interpret_prompts=True to accept Claude Code's handling of the text it is sent."
        )


def effective_system_prompt(settings: ClaudeCodeModelSettings, system_prompt: str | None) -> str | None:
    """The system prompt the CLI gets: the request's system prompts and instructions, and the appended text."""
    if append := settings.get("claude_code_system_prompt_append"):
        return f"{system_prompt}\n\n{append}" if system_prompt else append
    return system_prompt


class BuiltOptions:
    """The last few results of building options, reused while a request's inputs equal theirs.

    The turns of a conversation (and the conversations of one agent) ask for the same options again and again;
    comparing their inputs costs a fraction of building the options and their signature. Keys are compared by
    equality and kept as deep copies, so a settings dict changed in place later is a new key.
    """

    SIZE = 4

    def __init__(self) -> None:
        self._entries: list[tuple[object, Any]] = []

    def get(self, key: object) -> Any | None:
        for index, (known, value) in enumerate(self._entries):
            try:
                same = bool(known == key)
            except Exception:  # a value whose comparison fails (or is not a truth value): never reused
                same = False
            if same:
                if index:
                    self._entries.insert(0, self._entries.pop(index))
                return value
        return None

    def put(self, key: object, value: Any) -> None:
        try:
            kept = copy.deepcopy(key)
        except Exception:  # a value that cannot be copied: not cached
            return
        self._entries.insert(0, (kept, value))
        del self._entries[self.SIZE :]


def _hooks(settings: ClaudeCodeModelSettings, native_tools: NativeToolPlan) -> dict[str, list[Any]] | None:
    """The library's hooks (restrictions, native tool filters), then the user's."""
    restrictions = settings.get("claude_code_tool_parameter_restrictions")
    user_hooks = settings.get("claude_code_hooks")
    hooks: dict[str, list[Any]] = dict(restriction_hooks(restrictions)) if restrictions else {}
    for more in (native_tools.hooks(), user_hooks or {}):
        for event, matchers in more.items():
            hooks[event] = [*hooks.get(event, []), *matchers]
    return hooks or None


_THINKING_BUDGETS = {"minimal": 1024, "low": 4096, "medium": 10000, "high": 31999, "xhigh": 48000, "max": 63999}
_THINKING_EFFORTS: dict[str, Literal["low", "medium", "high", "xhigh", "max"]] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "max",
}


def _unified_thinking(settings: ClaudeCodeModelSettings, unified: ThinkingLevel | None) -> ThinkingLevel | None:
    """The unified level: from the request parameters (after ``prepare_request``), else from the settings."""
    return unified if unified is not None else settings.get("thinking")


def _thinking(settings: ClaudeCodeModelSettings, unified: ThinkingLevel | None = None) -> ThinkingConfig | None:
    explicit = settings.get("claude_code_thinking")
    if explicit is not None:
        if explicit == "adaptive":
            return {"type": "adaptive"}
        if explicit == "disabled":
            return {"type": "disabled"}
        return {"type": "enabled", "budget_tokens": int(explicit)}
    level = _unified_thinking(settings, unified)
    if level is None:
        return None
    if level is False:
        return {"type": "disabled"}
    if level is True:
        return {"type": "adaptive"}
    if level in _THINKING_BUDGETS:
        # Models with a thinking budget get it; the CLI turns it into adaptive thinking for newer models.
        return {"type": "enabled", "budget_tokens": _THINKING_BUDGETS[level]}
    return {"type": "adaptive"}


def _effort(
    settings: ClaudeCodeModelSettings, unified: ThinkingLevel | None = None
) -> Literal["low", "medium", "high", "xhigh", "max"] | None:
    """The explicit effort, else the effort a unified thinking level names (models with adaptive thinking use it)."""
    explicit = settings.get("claude_code_effort")
    if explicit is not None or settings.get("claude_code_thinking") is not None:
        return explicit
    level = _unified_thinking(settings, unified)
    return _THINKING_EFFORTS.get(level) if isinstance(level, str) else None


def _rule_tool(rule: str) -> str:
    """The tool a permission rule is about (``"Bash(git status:*)"`` → ``"Bash"``)."""
    return rule.split("(", 1)[0].strip()
