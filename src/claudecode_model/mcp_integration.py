"""High-level conversion: pydantic-ai toolsets → an in-process MCP server for Claude Code.

Tools of a server named ``pydantic_tools`` (the default) reach Claude as ``mcp__pydantic_tools__<tool name>``;
grant them with :func:`allowed_tool_names`. :func:`filter_tools_for_request` implements the tool matching of
``ClaudeCodeModel._process_function_tools()``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard, cast

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool, create_sdk_mcp_server

from claudecode_model.exceptions import ToolNotFoundError, ToolsetNotRegisteredError, ToolValidationError
from claudecode_model.tool_converter import (
    AgentToolset,
    JsonSchema,
    PydanticAITool,
    _format_return_value_as_mcp,
    _get_parameters_json_schema,
    _Invoker,
    _sdk_result,
    convert_tool,
    convert_tool_with_deps,
)

if TYPE_CHECKING:
    from claudecode_model.deps_support import DepsContext

__all__ = [
    "DEFAULT_SERVER_NAME",
    "ToolDefinition",
    "ToolHandler",
    "ToolSource",
    "allowed_tool_names",
    "collect_tools",
    "convert_tools_to_mcp_server",
    "create_mcp_server_from_tools",
    "create_tool_wrapper",
    "extract_tool_definitions",
    "filter_tools_for_request",
    "mcp_tool_name",
]

logger = logging.getLogger(__name__)

DEFAULT_SERVER_NAME = "pydantic_tools"
"""The MCP server name tools are published under unless another is given."""


class ToolDefinition(TypedDict):
    """A tool reduced to what an MCP server needs: name, description, input schema and the function."""

    name: str
    description: str
    input_schema: JsonSchema
    function: Callable[..., Any]


ToolHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An async tool handler: MCP arguments in, an MCP result dict (``content``, ``isError``, ``is_error``)."""

ToolSource = AgentToolset | PydanticAITool | Iterable[AgentToolset | PydanticAITool]
"""A toolset (``agent._function_toolset``), a tool, or a sequence mixing both."""


class _NoDeps:
    """Marks "no deps given" (``None`` is a valid deps value)."""

    def __repr__(self) -> str:
        return "<no deps>"


_NO_DEPS: Any = _NoDeps()


@dataclass(frozen=True, slots=True)
class _DefinitionTool:
    """A :class:`ToolDefinition` seen through the attributes the converter reads."""

    name: str
    description: str
    parameters_json_schema: JsonSchema
    function: Callable[..., Any]
    takes_ctx: bool = False


def _is_toolset(value: object) -> TypeGuard[AgentToolset]:
    return isinstance(getattr(value, "tools", None), Mapping)


def collect_tools(source: ToolSource) -> list[PydanticAITool]:
    """Flatten toolsets and tools into one list, in order.

    Raises:
        ToolValidationError: two tools share a name (or a tool's name is empty).
    """
    single = _is_toolset(source) or hasattr(source, "function")
    items: Iterable[object] = [source] if single else cast("Iterable[object]", source)
    tools: list[PydanticAITool] = []
    seen: set[str] = set()
    for item in items:
        for tool in item.tools.values() if _is_toolset(item) else [item]:
            name = getattr(tool, "name", None)
            if not isinstance(name, str) or not name.strip():
                raise ToolValidationError(f"Tool name must be a non-empty string, got {name!r} (tool {tool!r}).")
            if name in seen:
                raise ToolValidationError(f"Two tools are named {name!r}; tool names must be unique per server.")
            seen.add(name)
            tools.append(tool)  # type: ignore[arg-type]
    return tools


def extract_tool_definitions(source: ToolSource) -> list[ToolDefinition]:
    """Validate tools and reduce them to :class:`ToolDefinition` dicts.

    Raises:
        ToolValidationError: empty or duplicate name, no function, or a parameters schema that is not a dict.
    """
    definitions: list[ToolDefinition] = []
    for tool in collect_tools(source):
        invoker = _Invoker.of(tool)
        definitions.append(
            {
                "name": invoker.name,
                "description": tool.description or "",
                "input_schema": _get_parameters_json_schema(tool),
                "function": invoker.function,
            }
        )
    return definitions


def create_tool_wrapper(
    tool: PydanticAITool | ToolDefinition, *, deps_context: DepsContext[Any] | None = None
) -> ToolHandler:
    """Build a :data:`ToolHandler` that runs ``tool`` and returns its result in MCP form.

    Arguments are validated with the tool's pydantic-ai schema when it has one; sync functions run in a worker
    thread. Unlike :func:`~claudecode_model.tool_converter.convert_tool`'s handler, an exception is logged and
    re-raised: the caller decides how to report it (the SDK's in-process server reports it to Claude as an
    error result carrying the message; the IPC bridge sends it as an error payload).

    Raises:
        ToolValidationError: empty name or no function.
        NotImplementedError: the tool takes a ``RunContext`` and no ``deps_context`` was given.
    """
    if isinstance(tool, dict):
        view: object = _DefinitionTool(
            name=tool.get("name", ""),
            description=tool.get("description", ""),
            parameters_json_schema=tool.get("input_schema", {}),
            function=tool.get("function"),
        )
    else:
        view = tool
    invoker = _Invoker.of(view)
    if invoker.takes_ctx and deps_context is None:
        raise NotImplementedError(f"Tool {invoker.name!r} takes a RunContext; pass deps_context=DepsContext(deps).")

    async def wrapper(arguments: dict[str, Any]) -> dict[str, Any]:
        ctx = deps_context.for_call(invoker.name) if deps_context is not None else None
        try:
            value = await invoker(arguments, ctx)
        except Exception:
            logger.error("Tool %r failed", invoker.name, exc_info=True)
            raise
        return _sdk_result(_format_return_value_as_mcp(value))

    return wrapper


def _validated_server_name(server_name: str) -> str:
    if not server_name or not server_name.strip():
        raise ToolValidationError("The MCP server name must be a non-empty string.")
    return server_name


def create_mcp_server_from_tools(
    tools: ToolSource,
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    version: str = "1.0.0",
    deps: Any = _NO_DEPS,
    read_only: bool = False,
) -> McpSdkServerConfig:
    """Build an in-process MCP server (for ``ClaudeAgentOptions.mcp_servers``) from toolsets or tools.

    Each tool is converted with :func:`~claudecode_model.tool_converter.convert_tool`; a tool that takes a
    ``RunContext`` is converted with :func:`~claudecode_model.tool_converter.convert_tool_with_deps` when
    ``deps`` is given (experimental). Claude sees the tools as ``mcp__<server_name>__<tool name>``.
    ``read_only=True`` marks every tool ``readOnlyHint`` so Claude Code may run several at once.

    Raises:
        ToolValidationError: an empty or duplicate tool name, a tool without function, a bad schema, or an
            empty server name.
        NotImplementedError: a tool takes a ``RunContext`` and no ``deps`` were given.
        UnsupportedDepsTypeError: ``deps`` are needed and not serialisable.
    """
    _validated_server_name(server_name)
    sdk_tools: list[SdkMcpTool[Any]] = []
    for tool in collect_tools(tools):
        if getattr(tool, "takes_ctx", False) and deps is not _NO_DEPS:
            sdk_tools.append(convert_tool_with_deps(tool, deps, read_only=read_only))
        else:
            sdk_tools.append(convert_tool(tool, read_only=read_only))
    logger.debug("MCP server %r: %s", server_name, [t.name for t in sdk_tools])
    return create_sdk_mcp_server(name=server_name, version=version, tools=sdk_tools)


def convert_tools_to_mcp_server(
    toolsets: ToolSource,
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    version: str = "1.0.0",
    deps: Any = _NO_DEPS,
    read_only: bool = False,
) -> McpSdkServerConfig:
    """Convert pydantic-ai toolsets (e.g. ``agent._function_toolset``) into an in-process MCP server config.

    Same as :func:`create_mcp_server_from_tools`; the public name of FR-013.
    """
    return create_mcp_server_from_tools(toolsets, server_name, version=version, deps=deps, read_only=read_only)


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
            "model.set_agent_toolsets(agent._function_toolset) after defining the agent's tools."
        )
    available = {tool.name: tool for tool in collect_tools(registered_toolsets)}
    missing = [name for name in names if name not in available]
    if missing:
        raise ToolNotFoundError(
            f"Tools not found in the registered toolsets: {', '.join(missing)}. "
            f"Available tools: {', '.join(available) or 'none'}."
        )
    return [available[name] for name in names]


def mcp_tool_name(tool_name: str, server_name: str = DEFAULT_SERVER_NAME) -> str:
    """The name Claude Code gives a tool of an MCP server: ``mcp__<server_name>__<tool_name>``."""
    return f"mcp__{server_name}__{tool_name}"


def allowed_tool_names(server_name: str = DEFAULT_SERVER_NAME, tool_names: Iterable[str] | None = None) -> list[str]:
    """``allowed_tools`` entries for a server: each named tool, or the whole server (``mcp__<server>``)."""
    if tool_names is None:
        return [f"mcp__{server_name}"]
    return [mcp_tool_name(name, server_name) for name in tool_names]
