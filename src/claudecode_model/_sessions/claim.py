"""Parked CLIs: started before their session is known, bound to it when a new conversation claims them.

Claude Code started with ``--await-claim`` boots with the options of its launch and waits, without a session, for a
``claim_session`` control request that gives it the session's working directory, system prompt, permission mode
and in-process MCP servers; a ``set_model`` right behind the claim sets the model before the first message, as
``--model`` does at a start; an ``apply_flag_settings`` ahead of the claim allows the tools of those servers
(``permissions.allow``, as ``--allowedTools`` does at a start). One parked CLI therefore serves any session whose
launch options match
(:func:`~claudecode_model._sessions.options.launch_signature`). Measured with the bundled CLI against the offline
backend, what the API receives after a claim (system prompt, model, tools, the whole request but its session ids)
is what a CLI launched with those options sends; a claimed spare's first answer came 0.05-0.35 s later than a ready
spare's (the claim connects the in-process servers and binds the session), and sooner than a new process's.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from claudecode_model._sessions.setting_table import TOOL_SEARCH_ENV

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

__all__ = ["CLAIM_TIMEOUT", "PARK_ARGUMENT", "ClaimRefusedError", "SessionClaim", "parked_options"]

PARK_ARGUMENT = "await-claim"
"""The CLI's flag that parks it until a claim (hidden from its help: ``SDK-internal``)."""

CLAIM_TIMEOUT = 10.0
"""Seconds a claim may take before the parked CLI is given up (a claim takes tens of milliseconds)."""


class ClaimRefusedError(Exception):
    """A parked CLI refused or failed a claim (its reason is the message): the CLI is not used."""


@dataclass(frozen=True)
class SessionClaim:
    """What a claim gives a parked CLI: everything of a session's options its launch did not fix."""

    cwd: str
    system_prompt: str
    permission_mode: str | None
    model: str | None
    sdk_servers: Mapping[str, Any]
    """The session's in-process MCP servers: name to ``mcp`` server instance."""
    allowed: tuple[str, ...] = ()
    """The allow rules of those servers' tools (``mcp__<server>``), which the parked CLI was launched without."""

    @classmethod
    def of(cls, options: ClaudeAgentOptions, *, allowed: Collection[str] = ()) -> SessionClaim:
        """The claim that makes a parked CLI what a CLI launched with ``options`` would be (``allowed``: the allow
        rules of ``options`` that its launch left to the claim)."""
        prompt = options.system_prompt
        match prompt:
            case str():
                text = prompt
            case {"type": "custom", "prompt": str(custom)}:
                text = custom
            case _:
                raise ValueError(f"a claim carries a custom system prompt, not {prompt!r}")
        servers: dict[str, Any] = options.mcp_servers if isinstance(options.mcp_servers, dict) else {}
        return cls(
            cwd=str(options.cwd) if options.cwd is not None else os.getcwd(),
            system_prompt=text,
            permission_mode=options.permission_mode,
            model=options.model,
            sdk_servers={
                name: config["instance"]
                for name, config in servers.items()
                if isinstance(config, dict) and config.get("type") == "sdk"
            },
            allowed=tuple(rule for rule in options.allowed_tools if rule in allowed),
        )

    def request(self) -> dict[str, Any]:
        """The ``claim_session`` control request."""
        claim: dict[str, Any] = {
            "subtype": "claim_session",
            "cwd": self.cwd,
            "system_prompt": [self.system_prompt],
            "sdk_mcp_servers": sorted(self.sdk_servers),
        }
        if self.permission_mode is not None:
            claim["permission_mode"] = self.permission_mode
        return claim

    def allow_request(self) -> dict[str, Any] | None:
        """The ``apply_flag_settings`` request that allows the session's server tools ahead of the claim (``None``:
        nothing to allow)."""
        if not self.allowed:
            return None
        return {"subtype": "apply_flag_settings", "settings": {"permissions": {"allow": list(self.allowed)}}}


def parked_options(options: ClaudeAgentOptions, *, claimed_rules: Collection[str] = ()) -> ClaudeAgentOptions:
    """``options`` for a CLI that parks after its start: the flag added, and tool search off as wherever tools are
    served. Its in-process servers are connected at the launch (the claim keeps those it names and connects the
    others), and so are their allow rules: harmless in a session without those servers, and a session with servers
    the launch did not allow gets their rules with its claim. ``claimed_rules`` leaves such rules out (what the
    launch signature compares)."""
    return replace(
        options,
        extra_args={**options.extra_args, PARK_ARGUMENT: None},
        allowed_tools=[rule for rule in options.allowed_tools if rule not in claimed_rules],
        env={TOOL_SEARCH_ENV: "false", **options.env},
    )
