"""Serving the agent's tools to the Claude Code CLI over a transport: in-process MCP or the IPC bridge.

``"sdk"`` serves the tools from an in-process MCP server the SDK connects over the CLI's control channel.
``"stdio"`` starts an :class:`~claudecode_model.ipc.IPCSession` and lets the CLI spawn the bridge
(``python -m claudecode_model.ipc.bridge``), which forwards calls over a private Unix socket.

``"auto"`` picks ``"sdk"`` whenever the installed CLI supports in-process servers (version 2.0.0 and later,
the SDK's own minimum). Measured against the offline backend, both transports cost the same per call and per cold
run within the noise; the bridge adds a process per CLI session and costs more for large payloads (see
``docs/ipc.md`` and ``docs/benchmarks.md``). Older CLIs get the bridge.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from claude_agent_sdk.types import McpServerConfig

from claudecode_model._process.binary import SDK_SERVER_MINIMUM_CLI, cli_version, cli_version_async
from claudecode_model._tools.call_results import RESULT_SIZE_META
from claudecode_model._tools.core import ToolSpec, run_tool_call, tool_spec
from claudecode_model._tools.execution import TransportType, check_transport_available
from claudecode_model._tools.inprocess_server import build_inprocess_server
from claudecode_model.exceptions import ToolValidationError
from claudecode_model.ipc._config import stdio_server_config, tool_use_id
from claudecode_model.ipc._constants import SECRET_ENV_VAR
from claudecode_model.ipc._types import MetaToolHandler, ToolSchema

if TYPE_CHECKING:
    from claudecode_model.ipc._session import IPCSession  # the stdio transport only: loaded when it is used

__all__ = [
    "ResolvedTransport",
    "ServedTools",
    "checked_transport",
    "registered_tool_specs",
    "resolve_transport",
    "serve_tools",
    "serves_inprocess",
]

logger = logging.getLogger(__name__)

ResolvedTransport = Literal["sdk", "stdio"]

_TRANSPORTS = ("auto", "stdio", "sdk")


def checked_transport(transport: TransportType) -> TransportType:
    """``transport`` itself, or a :class:`ToolValidationError` if it is not a transport."""
    if transport not in _TRANSPORTS:
        raise ToolValidationError(f"Unknown tool transport {transport!r}; use one of {', '.join(_TRANSPORTS)}.")
    check_transport_available(transport)
    return transport


def resolve_transport(transport: TransportType, cli_path: Path) -> ResolvedTransport:
    """The concrete transport for ``transport`` with the CLI at ``cli_path``."""
    match checked_transport(transport):
        case "sdk" | "stdio" as concrete:
            return concrete
        case "auto":
            pass
    version = cli_version(cli_path)
    if version is None or version >= SDK_SERVER_MINIMUM_CLI:
        return "sdk"
    check_transport_available("stdio")  # no IPC bridge here (Windows): the error says to upgrade to 'sdk'
    logger.info("Claude Code %s predates in-process MCP servers: serving tools over the IPC bridge", version)
    return "stdio"


async def serves_inprocess(cli_path: Path) -> bool:
    """Whether the CLI at ``cli_path`` serves in-process MCP servers (a CLI whose version is unknown is assumed to);
    asks a binary other than the bundled one without blocking the event loop."""
    version = await cli_version_async(cli_path)
    return version is None or version >= SDK_SERVER_MINIMUM_CLI


@dataclass
class ServedTools:
    """An MCP server config for the CLI, and what must be stopped with the CLI process."""

    config: McpServerConfig
    cli_env: dict[str, str] = field(default_factory=dict)
    """Environment the CLI process needs (the bridge inherits it): the IPC session secret."""
    ipc: IPCSession | None = None
    """The IPC session behind a stdio server."""

    async def stop(self) -> None:
        """Stop the IPC session, if any (after the CLI, so no call is left waiting)."""
        if self.ipc is not None:
            await self.ipc.stop()

    def discard(self) -> None:
        """Synchronous last resort (interpreter exit): remove the IPC files."""
        if self.ipc is not None:
            self.ipc._remove_files()


async def serve_tools(server_name: str, specs: Sequence[ToolSpec], transport: ResolvedTransport) -> ServedTools:
    """Serve ``specs`` as the MCP server ``server_name`` over ``transport`` (started, for ``"stdio"``).

    Both transports run each call with :func:`~claudecode_model._tools.core.run_tool_call`: the same handler, the same
    ``tool_use`` id, the same error results.
    """
    if transport == "sdk":
        return ServedTools(config=build_inprocess_server(server_name, specs))
    from claudecode_model.ipc._session import IPCSession

    schemas: list[ToolSchema] = []
    handlers: dict[str, MetaToolHandler] = {}
    for spec in specs:
        schema: ToolSchema = {
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
            "meta": dict(RESULT_SIZE_META),
        }
        if spec.read_only:
            schema["annotations"] = {"readOnlyHint": True}
        schemas.append(schema)
        handlers[spec.name] = _meta_handler(spec)
    session = IPCSession({}, schemas, meta_tool_handlers=handlers)
    await session.start()
    # The secret reaches the bridge through the CLI's own environment (which the bridge inherits), not through
    # the server config: that travels on the CLI's command line, which any user can read in /proc.
    config = stdio_server_config(session, include_secret=False)
    return ServedTools(config=config, cli_env={SECRET_ENV_VAR: session.secret}, ipc=session)


def _meta_handler(spec: ToolSpec) -> MetaToolHandler:
    async def handle(arguments: dict[str, object], meta: dict[str, object]) -> dict[str, object]:
        return dict(await run_tool_call(spec, arguments, tool_use_id(meta)))

    return handle


def registered_tool_specs(tools: Sequence[object]) -> list[ToolSpec]:
    """Tools registered with ``set_agent_toolsets`` as tool specs (the same specs ``convert_tool`` wraps)."""
    return [tool_spec(tool, check_arguments=True) for tool in tools]
