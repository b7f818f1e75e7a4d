"""pydantic-ai tools → claude-agent-sdk MCP tools and in-process servers.

The one conversion both the conversion API of earlier releases (:mod:`claudecode_model.tool_converter`,
:mod:`claudecode_model.mcp_integration`, which re-export these names) and a model's registered toolsets use.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, TypeGuard, cast

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool
from mcp.types import ToolAnnotations

from claudecode_model._tools.core import (
    DEFAULT_SERVER_NAME,
    AgentToolset,
    PydanticAITool,
    ToolSpec,
    checked_server_name,
    checked_tool_name,
    run_tool_call,
    sdk_result,
    takes_run_context,
    tool_spec,
)
from claudecode_model._tools.inprocess_server import build_inprocess_server
from claudecode_model.deps_support import DepsContext, ToolCallContext, create_deps_context
from claudecode_model.exceptions import ToolNotFoundError, ToolsetNotRegisteredError, ToolValidationError

__all__ = [
    "McpServerConfig",
    "ToolSource",
    "checked_tool",
    "collect_tools",
    "convert_tool",
    "convert_tool_with_context",
    "convert_tool_with_deps",
    "filter_tools_for_request",
    "is_toolset",
    "sdk_tool",
    "tool_server",
]

logger = logging.getLogger(__name__)


ToolSource = AgentToolset | PydanticAITool | Iterable[AgentToolset | PydanticAITool]
"""A toolset (``agent._function_toolset``), a tool, or a sequence mixing both."""


class McpServerConfig(TypedDict):
    """Converted tools with a server name and version (what :func:`convert_tools_to_mcp_server` returns when
    called with ``server_version``, as in earlier releases)."""

    name: str
    version: str
    tools: list[SdkMcpTool[Any]]


def is_toolset(value: object) -> TypeGuard[AgentToolset]:
    return isinstance(getattr(value, "tools", None), Mapping)


def collect_tools(source: ToolSource) -> list[PydanticAITool]:
    """Flatten toolsets and tools into one list, in order.

    Raises:
        ToolValidationError: two tools share a name (or a tool's name is empty).
    """
    single = is_toolset(source) or hasattr(source, "function")
    items: Iterable[object] = [source] if single else cast("Iterable[object]", source)
    tools: list[PydanticAITool] = []
    seen: set[str] = set()
    for item in items:
        for tool in item.tools.values() if is_toolset(item) else [item]:
            name = checked_tool_name(getattr(tool, "name", None), tool)
            if name in seen:
                raise ToolValidationError(f"Two tools are named {name!r}; tool names must be unique per server.")
            seen.add(name)
            tools.append(tool)  # type: ignore[arg-type]
    return tools


def sdk_tool(spec: ToolSpec) -> SdkMcpTool[Any]:
    async def sdk_handler(arguments: dict[str, Any]) -> dict[str, Any]:
        return sdk_result(await run_tool_call(spec, arguments, None))

    return SdkMcpTool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        handler=sdk_handler,
        annotations=ToolAnnotations(read_only_hint=True) if spec.read_only else None,
    )


def checked_tool(tool: object, converter: str) -> object:
    """``tool`` itself, or a ``TypeError`` when it is no tool at all (neither ``name`` nor ``function``)."""
    if not hasattr(tool, "name") and not hasattr(tool, "function"):
        raise TypeError(
            f"{converter}() expected a pydantic-ai Tool (with name and function), got {type(tool).__name__}"
        )
    return tool


def convert_tool(tool: PydanticAITool, *, read_only: bool = False) -> SdkMcpTool[Any]:
    """Convert a pydantic-ai tool (a ``Tool``, or anything matching :class:`PydanticAITool`) to an SdkMcpTool.

    The handler returns an MCP result dict (``content``, ``isError``, and ``is_error`` for the SDK).
    ``read_only=True`` marks the tool ``readOnlyHint``, which lets Claude Code run several calls at once.

    Raises:
        TypeError: ``tool`` is not a tool.
        ToolValidationError: empty name, no function, or a parameters schema that is missing or not a dict.
        NotImplementedError: the tool takes a ``RunContext`` (use :func:`convert_tool_with_deps`).
    """
    return sdk_tool(tool_spec(checked_tool(tool, "convert_tool"), read_only=read_only))


def convert_tool_with_deps(tool: PydanticAITool, deps: object, *, read_only: bool = False) -> SdkMcpTool[Any]:
    """Convert a tool whose function takes a ``RunContext``, injecting ``deps`` via a :class:`DepsContext`.

    Experimental: the API may change. ``deps`` must be serialisable (see
    :mod:`claudecode_model.deps_support`); the tool's ``ctx`` argument is a :class:`DepsContext` whose
    ``deps`` is this very object.

    Raises:
        TypeError: ``tool`` is not a tool.
        UnsupportedDepsTypeError: ``deps`` is not serialisable.
        TypeHintResolutionError: a dataclass in ``deps`` has annotations naming undefined types.
        ToolValidationError: empty name, no function, or a parameters schema that is missing or not a dict.
    """
    checked_tool(tool, "convert_tool_with_deps")
    return convert_tool_with_context(tool, create_deps_context(deps), read_only=read_only)


def convert_tool_with_context(
    tool: PydanticAITool, deps_context: ToolCallContext[Any] | DepsContext[Any], *, read_only: bool = False
) -> SdkMcpTool[Any]:
    """Convert a tool with a context built beforehand: a :class:`DepsContext` (serialisable deps, checked) or
    a :class:`ToolCallContext` (any deps, not checked). Experimental.

    Raises:
        ToolValidationError: empty name, no function, or a parameters schema that is missing or not a dict.
    """
    return sdk_tool(tool_spec(tool, deps_context=deps_context, read_only=read_only))


def tool_server(
    tools: Iterable[object],
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    version: str = "1.0.0",
    deps_context: ToolCallContext[Any] | None = None,
    read_only: bool = False,
) -> McpSdkServerConfig:
    """The in-process MCP server for ``tools``; tools that take a ``RunContext`` get ``deps_context``.

    Raises:
        ToolValidationError: an empty or duplicate tool name, a tool without function, a bad schema, or an
            empty server name.
        NotImplementedError: a tool takes a ``RunContext`` and no ``deps_context`` was given.
    """
    checked_server_name(server_name)
    specs = [
        tool_spec(
            tool,
            deps_context=deps_context if takes_run_context(tool) else None,
            read_only=read_only,
            check_arguments=True,
        )
        for tool in tools
    ]
    logger.debug("MCP server %r: %s", server_name, [spec.name for spec in specs])
    return build_inprocess_server(server_name, specs, version=version)


def filter_tools_for_request(
    registered_toolsets: ToolSource | None, function_tool_names: Iterable[str]
) -> list[PydanticAITool]:
    """Pick the registered tools a request names, in the request's order (``_process_function_tools()``).

    ``registered_toolsets`` is ``None`` when ``set_agent_toolsets()`` was never called. No names → no tools.

    Raises:
        ToolsetNotRegisteredError: names were given but nothing is registered.
        ToolNotFoundError: a name matches no registered tool (the message lists missing and available ones).
    """
    names = list(dict.fromkeys(function_tool_names))
    if not names:
        return []
    if registered_toolsets is None:
        raise ToolsetNotRegisteredError(
            f"The request uses function tools ({', '.join(names)}) but no toolsets are registered; call "
            "model.set_agent_toolsets(agent._function_toolset) after defining the agent's tools.",
            requested_tools=names,
        )
    available = {tool.name: tool for tool in collect_tools(registered_toolsets)}
    missing = [name for name in names if name not in available]
    if missing:
        raise ToolNotFoundError(
            f"Tools not found in the registered toolsets: {', '.join(missing)}. "
            f"Available tools: {', '.join(available) or 'none'}.",
            missing_tools=missing,
            available_tools=list(available),
        )
    return [available[name] for name in names]
