"""High-level conversion: pydantic-ai toolsets → an in-process MCP server for Claude Code.

A thin layer over the package's tool core: the servers built here are the same in-process servers that serve the
agent's own tools, so registered tools and run tools share one serving path, error semantics and ``tool_use`` id
handling. Tools of a server named ``pydantic_tools`` (the default) reach Claude as
``mcp__pydantic_tools__<tool name>``; grant them with :func:`allowed_tool_names`. :func:`filter_tools_for_request`
implements the tool matching of ``ClaudeCodeModel._process_function_tools()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, overload

from claude_agent_sdk import McpSdkServerConfig

from claudecode_model._tools.conversion import (
    McpServerConfig,
    ToolSource,
    collect_tools,
    convert_tool,
    convert_tool_with_deps,
    filter_tools_for_request,
    tool_server,
)
from claudecode_model._tools.core import (
    DEFAULT_SERVER_NAME,
    AgentToolset,
    JsonSchema,
    PydanticAITool,
    ToolInvoker,
    allowed_tool_names,
    checked_server_name,
    format_result,
    mcp_tool_name,
    parameters_json_schema,
    sdk_result,
    takes_run_context,
)
from claudecode_model.deps_support import create_deps_context
from claudecode_model.exceptions import (
    MissingDepsError,
    ToolValidationError,
)
from claudecode_model.ipc._types import ToolHandler

if TYPE_CHECKING:
    from claude_agent_sdk import SdkMcpTool

    from claudecode_model.deps_support import ToolCallContext

__all__ = [
    "DEFAULT_SERVER_NAME",
    "MCP_SERVER_NAME",
    "AgentToolset",
    "PydanticAITool",
    "ToolDefinition",
    "ToolHandler",
    "ToolSource",
    "ToolValidationError",
    "ToolWrapperFunc",
    "allowed_tool_names",
    "collect_tools",
    "convert_tool_definition",
    "convert_tools_to_mcp_server",
    "create_mcp_server_from_tools",
    "create_tool_wrapper",
    "extract_tool_definitions",
    "extract_tools_from_toolsets",
    "filter_tools_for_request",
    "get_parameters_json_schema",
    "mcp_tool_name",
    "tool_server",
]

logger = logging.getLogger(__name__)

MCP_SERVER_NAME = DEFAULT_SERVER_NAME
"""The earlier name of :data:`DEFAULT_SERVER_NAME`."""


class ToolDefinition(TypedDict):
    """A tool reduced to what an MCP server needs: name, description, input schema and the function (``None`` when
    the tool has none: :func:`convert_tool_definition` refuses it)."""

    name: str
    description: str
    input_schema: JsonSchema
    function: Callable[..., Any] | None


ToolWrapperFunc = ToolHandler
"""The earlier name of :data:`ToolHandler`."""


class _NoDeps:
    """Marks "no deps given" (``None`` is a valid deps value)."""

    def __repr__(self) -> str:
        return "<no deps>"


_NO_DEPS: Any = _NoDeps()


@dataclass(frozen=True, slots=True)
class _DefinitionTool:
    """A :class:`ToolDefinition` seen through the attributes the core reads."""

    name: str
    description: str
    parameters_json_schema: JsonSchema
    function: Callable[..., Any] | None
    takes_ctx: bool = False


def get_parameters_json_schema(tool: object) -> JsonSchema:
    """A tool's parameters JSON schema (``parameters_json_schema``, ``function_schema.json_schema`` or
    ``tool_def.parameters_json_schema``, the first found).

    Raises:
        ToolValidationError: none found, or the value found is not a ``dict``.
    """
    return parameters_json_schema(tool)


def extract_tool_definitions(source: ToolSource) -> list[ToolDefinition]:
    """Validate tools and reduce them to :class:`ToolDefinition` dicts.

    A tool without a function is kept (its ``function`` is ``None``); :func:`convert_tool_definition` refuses it.

    Raises:
        ToolValidationError: empty or duplicate name, or a parameters schema that is missing or not a dict.
    """
    return [
        {
            "name": tool.name,
            "description": tool.description or "",
            "input_schema": parameters_json_schema(tool),
            "function": getattr(tool, "function", None),
        }
        for tool in collect_tools(source)
    ]


def extract_tools_from_toolsets(toolsets: ToolSource | None) -> list[ToolDefinition]:
    """:func:`extract_tool_definitions`, with ``None`` meaning no tools."""
    return [] if toolsets is None else extract_tool_definitions(toolsets)


def _definition_view(tool: object) -> object:
    """A tool as the core reads it: a tool as it is; a :class:`ToolDefinition` or a bare function wrapped."""
    if isinstance(tool, dict):
        return _DefinitionTool(
            name=tool.get("name", ""),
            description=tool.get("description", ""),
            parameters_json_schema=tool.get("input_schema", {}),
            function=tool.get("function"),
        )
    if callable(tool) and not hasattr(tool, "function"):
        return _DefinitionTool(getattr(tool, "__name__", "tool"), "", {}, tool)
    return tool


@overload
def create_tool_wrapper(
    tool: PydanticAITool | ToolDefinition | Callable[..., Any], *, deps_context: ToolCallContext[Any] | None = None
) -> ToolHandler: ...
@overload
def create_tool_wrapper(tool: str, original_function: Callable[..., Any]) -> ToolHandler: ...
def create_tool_wrapper(
    tool: PydanticAITool | ToolDefinition | Callable[..., Any] | str,
    original_function: Callable[..., Any] | None = None,
    *,
    deps_context: ToolCallContext[Any] | None = None,
) -> ToolHandler:
    """Build a :data:`ToolHandler` that runs ``tool`` and returns its result in MCP form.

    ``tool`` is a tool, a :class:`ToolDefinition` or a bare function (named after it); the earlier form
    ``create_tool_wrapper(name, function)`` works too. Arguments are validated with the tool's pydantic-ai schema
    when it has one; sync functions run in a worker thread. Unlike
    :func:`~claudecode_model.tool_converter.convert_tool`'s handler, an exception is logged and re-raised: the
    caller decides how to report it (the servers of this package report it to Claude as an error result carrying
    the message).

    Raises:
        ToolValidationError: empty name or no function.
        NotImplementedError: the tool takes a ``RunContext`` and no ``deps_context`` was given.
    """
    view = _DefinitionTool(tool, "", {}, original_function) if isinstance(tool, str) else _definition_view(tool)
    invoker = ToolInvoker.of(view)
    if invoker.takes_ctx and deps_context is None:
        raise MissingDepsError(f"Tool {invoker.name!r} takes a RunContext; pass deps_context=DepsContext(deps).")

    async def wrapper(arguments: dict[str, object]) -> dict[str, object]:
        try:
            value = await invoker(dict(arguments), invoker.context_for(deps_context, None))
        except Exception:
            logger.error("Tool %r failed", invoker.name, exc_info=True)
            raise
        return sdk_result(format_result(value))

    return wrapper


def convert_tool_definition(tool_def: ToolDefinition) -> SdkMcpTool[Any]:
    """A :class:`ToolDefinition` as an ``SdkMcpTool`` (errors become ``isError`` results).

    Raises:
        ToolValidationError: empty name or no function.
    """
    return convert_tool(_definition_view(tool_def))  # type: ignore[arg-type]


def create_mcp_server_from_tools(
    tools: ToolSource | str = DEFAULT_SERVER_NAME,
    server_name: str | ToolSource | None = DEFAULT_SERVER_NAME,
    version: str = "1.0.0",
    *,
    deps: Any = _NO_DEPS,
    read_only: bool = False,
    name: str | None = None,
    toolsets: ToolSource | None = None,
) -> McpSdkServerConfig:
    """Build an in-process MCP server (for ``ClaudeAgentOptions.mcp_servers``) from toolsets or tools.

    Claude sees the tools as ``mcp__<server_name>__<tool name>``. A tool that takes a ``RunContext`` gets a
    :class:`~claudecode_model.deps_support.DepsContext` of ``deps`` (experimental). ``read_only=True`` marks every
    tool ``readOnlyHint`` so Claude Code may run several at once. The earlier argument order
    ``create_mcp_server_from_tools(name, toolsets, version)`` and keywords ``name=`` / ``toolsets=`` work too.

    Raises:
        ToolValidationError: an empty or duplicate tool name, a tool without function, a bad schema, or an
            empty server name.
        NotImplementedError: a tool takes a ``RunContext`` and no ``deps`` were given.
        UnsupportedDepsTypeError: ``deps`` are needed and not serialisable.
    """
    if isinstance(tools, str):  # the earlier order: (name, toolsets, version)
        given = [] if server_name is None or isinstance(server_name, str) else server_name
        tools, server_name = given, tools
    if toolsets is not None:
        tools = toolsets
    if name is not None:
        server_name = name
    if not isinstance(server_name, str):
        raise ToolValidationError(f"The MCP server name must be a string, got {type(server_name).__qualname__}.")
    collected = collect_tools(tools)
    needs_deps = deps is not _NO_DEPS and any(takes_run_context(tool) for tool in collected)
    context = create_deps_context(deps) if needs_deps else None
    return tool_server(collected, server_name, version=version, deps_context=context, read_only=read_only)


@overload
def convert_tools_to_mcp_server(
    toolsets: ToolSource,
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    server_version: None = None,
    version: str = "1.0.0",
    deps: Any = _NO_DEPS,
    read_only: bool = False,
) -> McpSdkServerConfig: ...
@overload
def convert_tools_to_mcp_server(
    toolsets: ToolSource,
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    server_version: str,
    version: str = "1.0.0",
    deps: Any = _NO_DEPS,
    read_only: bool = False,
) -> McpServerConfig: ...
def convert_tools_to_mcp_server(
    toolsets: ToolSource,
    server_name: str = DEFAULT_SERVER_NAME,
    *,
    server_version: str | None = None,
    version: str = "1.0.0",
    deps: Any = _NO_DEPS,
    read_only: bool = False,
) -> McpSdkServerConfig | McpServerConfig:
    """Convert pydantic-ai toolsets (e.g. ``agent._function_toolset``) into an in-process MCP server config.

    Same as :func:`create_mcp_server_from_tools`. Called with ``server_version`` (as in earlier releases), it
    returns the converted tools instead: ``{"name": server_name, "version": server_version, "tools": [SdkMcpTool,
    ...]}``.
    """
    if server_version is None:
        return create_mcp_server_from_tools(toolsets, server_name, version=version, deps=deps, read_only=read_only)
    sdk_tools = [
        convert_tool_with_deps(tool, deps, read_only=read_only)
        if deps is not _NO_DEPS and takes_run_context(tool)
        else convert_tool(tool, read_only=read_only)
        for tool in collect_tools(toolsets)
    ]
    return {"name": checked_server_name(server_name), "version": server_version, "tools": sdk_tools}
