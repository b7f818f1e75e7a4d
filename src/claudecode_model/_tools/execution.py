"""How the agent's own tools reach the CLI and who runs them: the transports, the execution modes and their check
(light: importing the model stays cheap)."""

from __future__ import annotations

from typing import Literal

from claudecode_model._process import platform
from claudecode_model.exceptions import ClaudeCodeSettingsError, ToolValidationError
from claudecode_model.ipc._types import TransportType  # defined with the IPC transport, below the core

__all__ = [
    "DEFAULT_PERMISSION_MODE",
    "DEFAULT_SERVER_NAME",
    "STDIO_NEEDS_UNIX_SOCKETS",
    "TOOL_EXECUTIONS",
    "ToolExecution",
    "TransportType",
    "check_transport_available",
    "checked_tool_execution",
]

STDIO_NEEDS_UNIX_SOCKETS = (
    "tool_transport='stdio' needs Unix sockets (AF_UNIX) for its IPC bridge, and Python on Windows has none; "
    "use tool_transport='sdk' (what the default 'auto' picks), which serves the tools inside this process."
)


def check_transport_available(transport: object) -> None:
    """Refuse a transport this platform cannot run (``"stdio"`` without ``AF_UNIX``: Windows) with a
    :class:`ClaudeCodeSettingsError` naming the one that works."""
    if transport == "stdio" and not platform.UNIX_SOCKETS:
        raise ClaudeCodeSettingsError(STDIO_NEEDS_UNIX_SOCKETS)


DEFAULT_SERVER_NAME = "pydantic_tools"
"""The MCP server the agent's tools are published under unless another is given (``mcp__pydantic_tools__<name>``)."""

DEFAULT_PERMISSION_MODE = "dontAsk"
"""Claude Code's permission mode unless a setting says otherwise: a tool not granted is refused, nothing asks."""

ToolExecution = Literal["agent", "cli"]
"""Who runs the agent's own tools: pydantic-ai (``"agent"``, the default) or Claude Code's loop (``"cli"``)."""

TOOL_EXECUTIONS: tuple[ToolExecution, ...] = ("agent", "cli")


def checked_tool_execution(value: object) -> ToolExecution:
    """``value`` itself if it names a tool execution mode, else a :class:`ToolValidationError` naming the choices."""
    match value:
        case "agent" | "cli":
            return value
        case _:
            raise ToolValidationError(
                f"Unknown tool execution {value!r}; use 'agent' (pydantic-ai runs the tools) or 'cli' (Claude Code's "
                "loop runs them)."
            )
