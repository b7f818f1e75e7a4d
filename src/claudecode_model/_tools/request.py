"""The MCP servers one request needs, and serving them.

A request's tools reach the CLI as up to three MCP servers: the run's own function tools (executed through the run
context by a :class:`~claudecode_model._tools.router.RunToolRouter`), the toolsets registered with
``set_agent_toolsets`` (called without a run context), and pydantic-ai's output tools (a call is captured for the
agent to validate). :func:`plan_tool_servers` decides which, over which transport; :func:`serve_tool_servers` starts
them when a new CLI process needs them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from claudecode_model._history.cut_results import RESULT_READER_SERVER
from claudecode_model._tools.agent_executed import ToolExecution, waiting_tool_specs
from claudecode_model._tools.builtin_approvals import is_approval_tool
from claudecode_model._tools.core import allowed_tool_names, mcp_tool_name, takes_run_context
from claudecode_model._tools.execution import TransportType
from claudecode_model._tools.router import (
    AGENT_TOOLS_SERVER,
    OUTPUT_TOOLS_SERVER,
    RunToolRouter,
    agent_tool_specs,
    output_tool_specs,
    tools_signature,
)
from claudecode_model._tools.servers import (
    ResolvedTransport,
    ServedTools,
    checked_transport,
    registered_tool_specs,
    resolve_transport,
    serve_tools,
)
from claudecode_model.exceptions import MissingDepsError

if TYPE_CHECKING:
    # Registered toolsets (``set_agent_toolsets``) only: their modules load when a model registers some.
    from claude_agent_sdk import McpSdkServerConfig

    from claudecode_model._tools.conversion import ToolSource
    from claudecode_model._tools.core import PydanticAITool

__all__ = [
    "ToolNames",
    "ToolServerPlan",
    "ToolSetup",
    "plan_tool_servers",
    "reads_cut_results",
    "serve_tool_servers",
    "tool_names",
]

logger = logging.getLogger(__name__)


@dataclass
class ToolSetup:
    """How a model serves tools: its transport, and the toolsets registered with ``set_agent_toolsets``."""

    transport: TransportType = "auto"
    execution: ToolExecution = "agent"
    """Who runs the agent's own tools by default (a request's ``claude_code_tool_execution`` setting overrides it)."""
    registered_toolsets: ToolSource | None = None
    """What ``set_agent_toolsets`` was given (``None`` if never called)."""
    server_name: str = AGENT_TOOLS_SERVER
    registered_transport: TransportType = "auto"

    def __post_init__(self) -> None:
        self.transport = checked_transport(self.transport)

    def register(self, toolsets: ToolSource, *, server_name: str, transport: TransportType) -> None:
        """Serve ``toolsets`` under ``server_name`` (replacing an earlier registration, with a warning)."""
        from claudecode_model._tools.conversion import collect_tools

        # Registered tools are called without a run context: one that needs it would fail only at a request.
        needing = [tool.name for tool in collect_tools(toolsets) if takes_run_context(tool)]
        if needing:
            raise MissingDepsError(
                f"set_agent_toolsets(): {', '.join(needing)} take a RunContext, and registered tools are called "
                "without one. Leave them unregistered (ClaudeCodeModel runs an agent's tools with its own RunContext), "
                "or convert them with convert_tool_with_deps(tool, deps)."
            )
        if self.registered_toolsets is not None:
            logger.warning("set_agent_toolsets() replaces the toolsets registered before")
        self.registered_transport = checked_transport(transport)
        self.registered_toolsets = toolsets
        self.server_name = server_name

    def registered_server(self, function_tool_names: list[str]) -> McpSdkServerConfig | None:
        """The in-process MCP server holding only the registered tools this request names."""
        from claudecode_model._tools.conversion import filter_tools_for_request, tool_server

        tools = filter_tools_for_request(self.registered_toolsets, function_tool_names)
        if not tools:
            return None
        return tool_server(tools, self.server_name)


@dataclass
class ToolServerPlan:
    """One MCP server of a request: the run's own tools (``registered is None``) or registered toolsets."""

    name: str
    transport: ResolvedTransport
    function_defs: list[ToolDefinition]
    output_defs: list[ToolDefinition]
    registered: list[PydanticAITool] | None = None
    registry: ToolSource | None = None
    """The toolsets given to ``set_agent_toolsets`` (a new registration needs a new CLI session)."""
    execution: ToolExecution = "cli"
    """``"agent"``: pydantic-ai runs this server's tools (function and output tools), their handlers wait for its
    results; ``"cli"``: the handlers run them inside Claude Code's loop."""

    @property
    def calls_wait_for_pydantic_ai(self) -> bool:
        """Whether pydantic-ai runs the calls to this server (the turn waits for their results)."""
        return self.registered is None and self.execution == "agent"

    @property
    def needs_run_context(self) -> bool:
        """Whether calls to this server run the agent's tools inside Claude Code's loop, through the agent run's
        context (so the request needs one)."""
        return self.registered is None and self.execution == "cli" and bool(self.function_defs)

    @property
    def signature(self) -> list[Any]:
        kind = ("agent-run" if self.execution == "agent" else "run") if self.registered is None else "registered"
        tools = tools_signature(self.function_defs + self.output_defs)
        return [kind, self.name, self.transport, tools, id(self.registry) if self.registry is not None else None]


@dataclass(frozen=True)
class ToolNames:
    """How the CLI names the tools of a request's servers."""

    servers: tuple[str, ...]
    """``allowed_tools`` entries: ``mcp__<server>`` for each server."""
    prefixes: tuple[str, ...]
    """``mcp__<server>__``: stripped to give the agent's name of a tool."""
    output_tools: frozenset[str]
    """The CLI names of pydantic-ai's output tools."""
    agent_run_tools: frozenset[str] = frozenset()
    """The CLI names of the function tools pydantic-ai runs itself."""

    @property
    def plain_calls(self) -> frozenset[str]:
        """The CLI names of every tool whose calls go to pydantic-ai as ``ToolCallPart`` s."""
        return self.output_tools | self.agent_run_tools


def plan_tool_servers(
    setup: ToolSetup, params: ModelRequestParameters, cli_path: Path, execution: ToolExecution | None = None
) -> list[ToolServerPlan]:
    """The MCP servers this request needs: which tools each serves, over which transport, and who runs them.

    Tools standing for built-in tools that need approval (``BuiltinToolApprovals``) are not served: Claude Code
    has them built in."""
    function_defs = [tool for tool in params.function_tools if not is_approval_tool(tool)]
    output_defs = list(params.output_tools)
    if setup.registered_toolsets is None:
        if not function_defs and not output_defs:
            return []
        transport = resolve_transport(setup.transport, cli_path)
        run_by = execution or setup.execution
        return [ToolServerPlan(AGENT_TOOLS_SERVER, transport, function_defs, output_defs, execution=run_by)]
    from claudecode_model._tools.conversion import filter_tools_for_request

    transport = resolve_transport(setup.registered_transport, cli_path)
    servers: list[ToolServerPlan] = []
    registered = filter_tools_for_request(setup.registered_toolsets, [tool.name for tool in function_defs])
    if registered:
        servers.append(
            ToolServerPlan(
                setup.server_name,
                transport,
                function_defs,
                [],
                registered=registered,
                registry=setup.registered_toolsets,
            )
        )
    if output_defs:
        servers.append(ToolServerPlan(OUTPUT_TOOLS_SERVER, transport, [], output_defs))
    return servers


def reads_cut_results(servers: Sequence[ToolServerPlan]) -> bool:
    """Whether the request's session serves the tools that read a cut result (:data:`RESULT_READER_SERVER`): it does
    whenever it serves the agent's own tools (registered toolsets cut their results without them)."""
    return any(server.registered is None for server in servers)


def tool_names(servers: Sequence[ToolServerPlan]) -> ToolNames:
    """The CLI's names for the servers and tools of a request."""
    served = [server.name for server in servers] + ([RESULT_READER_SERVER] if reads_cut_results(servers) else [])
    return ToolNames(
        servers=tuple(name for server in served for name in allowed_tool_names(server)),
        prefixes=tuple(mcp_tool_name("", server.name) for server in servers),
        output_tools=frozenset(
            mcp_tool_name(tool.name, server.name) for server in servers for tool in server.output_defs
        ),
        agent_run_tools=frozenset(
            mcp_tool_name(tool.name, server.name)
            for server in servers
            if server.calls_wait_for_pydantic_ai
            for tool in server.function_defs
        ),
    )


async def serve_tool_servers(
    setup: ToolSetup, servers: Sequence[ToolServerPlan], router: RunToolRouter
) -> list[ServedTools]:
    """Start serving ``servers`` for a new CLI process (all or none: a failure stops those already started)."""
    served: list[ServedTools] = []
    try:
        for server in servers:
            served.append(await _serve(setup, server, router))
    except BaseException:
        for started in served:
            await started.stop()
        raise
    return served


async def _serve(setup: ToolSetup, server: ToolServerPlan, router: RunToolRouter) -> ServedTools:
    if server.calls_wait_for_pydantic_ai:
        specs = waiting_tool_specs(server.function_defs + server.output_defs, router.results, router.reader)
        return await serve_tools(server.name, specs, server.transport)
    if server.registered is None:
        specs = agent_tool_specs(server.function_defs, router) + output_tool_specs(server.output_defs, router)
        return await serve_tools(server.name, specs, server.transport)
    if server.transport == "sdk":
        config = setup.registered_server([tool.name for tool in server.function_defs])
        assert config is not None
        return ServedTools(config=config)
    return await serve_tools(server.name, registered_tool_specs(server.registered), server.transport)
