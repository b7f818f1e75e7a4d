"""The IPC bridge transport: this process's tools served to the Claude Code CLI by a stdio MCP
server.

The CLI starts ``python -m claudecode_model.ipc.bridge <socket_path> <schema_path>`` (see
``stdio_server_config()``); the bridge lists the tools from the schema file and forwards each call over a
private Unix socket to an ``IPCSession`` in this process, which runs it.

Names are loaded lazily (PEP 562): the bridge process imports this package on start-up and must not pay for
the parent-side modules (asyncio, pydantic-ai) it never uses.
"""

from __future__ import annotations

from claudecode_model._lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from claudecode_model.ipc._client import IPCClient
    from claudecode_model.ipc._config import bridge_environment, stdio_server_config, tool_use_id
    from claudecode_model.ipc._constants import (
        DEFAULT_TRANSPORT,
        LENGTH_PREFIX_SIZE,
        MAX_MESSAGE_SIZE,
        SCHEMA_FILE_PREFIX,
        SECRET_ENV_VAR,
        SOCKET_FILE_PREFIX,
        SOCKET_FILE_SUFFIX,
        SOCKET_PERMISSIONS,
        TOOL_USE_ID_META_KEY,
    )
    from claudecode_model.ipc._session import IPCSession, IPCSessionState
    from claudecode_model.ipc._types import (
        CallToolParams,
        IPCErrorPayload,
        IPCErrorResponse,
        IPCRequest,
        IPCResponse,
        JsonValue,
        MetaToolHandler,
        ToolHandler,
        ToolResult,
        ToolResultContent,
        ToolSchema,
        TransportType,
    )

_EXPORTS: dict[str, str] = {
    "DEFAULT_TRANSPORT": "._constants",
    "LENGTH_PREFIX_SIZE": "._constants",
    "MAX_MESSAGE_SIZE": "._constants",
    "SCHEMA_FILE_PREFIX": "._constants",
    "SECRET_ENV_VAR": "._constants",
    "SOCKET_FILE_PREFIX": "._constants",
    "SOCKET_FILE_SUFFIX": "._constants",
    "SOCKET_PERMISSIONS": "._constants",
    "TOOL_USE_ID_META_KEY": "._constants",
    "CallToolParams": "._types",
    "IPCErrorPayload": "._types",
    "IPCErrorResponse": "._types",
    "IPCRequest": "._types",
    "IPCResponse": "._types",
    "JsonValue": "._types",
    "MetaToolHandler": "._types",
    "ToolHandler": "._types",
    "ToolResult": "._types",
    "ToolResultContent": "._types",
    "ToolSchema": "._types",
    "TransportType": "._types",
    "IPCSession": "._session",
    "IPCSessionState": "._session",
    "IPCClient": "._client",
    "bridge_environment": "._config",
    "stdio_server_config": "._config",
    "tool_use_id": "._config",
}

__all__ = [
    "DEFAULT_TRANSPORT",
    "LENGTH_PREFIX_SIZE",
    "MAX_MESSAGE_SIZE",
    "SCHEMA_FILE_PREFIX",
    "SECRET_ENV_VAR",
    "SOCKET_FILE_PREFIX",
    "SOCKET_FILE_SUFFIX",
    "SOCKET_PERMISSIONS",
    "TOOL_USE_ID_META_KEY",
    "CallToolParams",
    "IPCClient",
    "IPCErrorPayload",
    "IPCErrorResponse",
    "IPCRequest",
    "IPCResponse",
    "IPCSession",
    "IPCSessionState",
    "JsonValue",
    "MetaToolHandler",
    "ToolHandler",
    "ToolResult",
    "ToolResultContent",
    "ToolSchema",
    "TransportType",
    "bridge_environment",
    "stdio_server_config",
    "tool_use_id",
]


__getattr__, __dir__ = lazy_exports(globals(), __all__, _EXPORTS)
