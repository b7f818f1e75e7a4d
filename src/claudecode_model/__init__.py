"""claudecode-model: pydantic-ai agents on Claude through the Claude Code CLI.

Names are imported lazily, so that light entry points (the IPC bridge process) do not pay for pydantic-ai.
"""

from __future__ import annotations

from claudecode_model._lazy import lazy_exports
from claudecode_model._version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing alone costs the bridge milliseconds
if TYPE_CHECKING:
    from claudecode_model._tools.execution import TransportType
    from claudecode_model.builtin_tools import BuiltinToolApprovals
    from claudecode_model.deps_support import (
        DepsContext,
        deserialize_deps,
        is_serializable_type,
        serialize_deps,
        validate_deps,
    )
    from claudecode_model.durable import DurableSetupError, check_dbos_sqlite, dbos_config
    from claudecode_model.exceptions import (
        BridgeStartupError,
        ClaudeCodeAPIError,
        ClaudeCodeAuthenticationError,
        ClaudeCodeConnectionError,
        ClaudeCodeContextWindowExceededError,
        ClaudeCodeError,
        ClaudeCodeModelNotFoundError,
        ClaudeCodeOverloadedError,
        ClaudeCodeQuotaExceededError,
        ClaudeCodeRateLimitError,
        ClaudeCodeRequestRejectedError,
        ClaudeCodeServerError,
        ClaudeCodeSettingsError,
        ClaudeCodeUnavailableError,
        CLIConnectionError,
        CLIInterruptedError,
        CLINotFoundError,
        CLIProcessError,
        CLIResponseParseError,
        CLITimeoutError,
        DependencyResolutionError,
        InvalidModelIdError,
        IPCConnectionError,
        IPCError,
        IPCMessageSizeError,
        IPCToolExecutionError,
        MessageConversionError,
        StructuredOutputError,
        ToolNotFoundError,
        ToolsetNotRegisteredError,
        ToolValidationError,
        TypeHintResolutionError,
        UnsupportedContentError,
        UnsupportedDepsTypeError,
    )
    from claudecode_model.mcp_integration import (
        DEFAULT_SERVER_NAME,
        ToolDefinition,
        ToolHandler,
        allowed_tool_names,
        convert_tools_to_mcp_server,
        create_mcp_server_from_tools,
        create_tool_wrapper,
        filter_tools_for_request,
        mcp_tool_name,
    )
    from claudecode_model.model import ClaudeCodeModel, ClaudeCodeResponse, ClaudeCodeStreamedResponse
    from claudecode_model.resolve import ClaudeCodeModels
    from claudecode_model.settings import BuiltinToolPolicy, ClaudeCodeModelSettings, PolicyDecision, SubagentDefinition
    from claudecode_model.stores.postgres import PostgresSessionStore
    from claudecode_model.stores.sqlite import SQLiteSessionStore
    from claudecode_model.temporal import ClaudeCodePlugin
    from claudecode_model.tool_converter import (
        AgentToolset,
        McpResponse,
        McpTextContent,
        PydanticAITool,
        convert_tool,
        convert_tool_with_deps,
    )

_EXPORTS: dict[str, str] = {
    # Every other name of __all__ is an exception class of claudecode_model.exceptions.
    **dict.fromkeys(
        ("DepsContext", "deserialize_deps", "is_serializable_type", "serialize_deps", "validate_deps"),
        "claudecode_model.deps_support",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_SERVER_NAME",
            "ToolDefinition",
            "ToolHandler",
            "allowed_tool_names",
            "convert_tools_to_mcp_server",
            "create_mcp_server_from_tools",
            "create_tool_wrapper",
            "filter_tools_for_request",
            "mcp_tool_name",
        ),
        "claudecode_model.mcp_integration",
    ),
    **dict.fromkeys(
        (
            "AgentToolset",
            "McpResponse",
            "McpTextContent",
            "PydanticAITool",
            "convert_tool",
            "convert_tool_with_deps",
        ),
        "claudecode_model.tool_converter",
    ),
    "ClaudeCodeModel": "claudecode_model.model",
    "ClaudeCodeResponse": "claudecode_model.model",
    "ClaudeCodeStreamedResponse": "claudecode_model.model",
    "ClaudeCodeModelSettings": "claudecode_model.settings",
    "BuiltinToolApprovals": "claudecode_model.builtin_tools",
    "BuiltinToolPolicy": "claudecode_model.settings",
    "PolicyDecision": "claudecode_model.settings",
    "PostgresSessionStore": "claudecode_model.stores.postgres",
    **dict.fromkeys(("DurableSetupError", "check_dbos_sqlite", "dbos_config"), "claudecode_model.durable"),
    "SQLiteSessionStore": "claudecode_model.stores.sqlite",
    "SubagentDefinition": "claudecode_model.settings",
    "ClaudeCodeModels": "claudecode_model.resolve",
    "ClaudeCodePlugin": "claudecode_model.temporal",
    "TransportType": "claudecode_model.ipc._types",
}

__all__ = [
    "DEFAULT_SERVER_NAME",
    "AgentToolset",
    "BridgeStartupError",
    "BuiltinToolApprovals",
    "BuiltinToolPolicy",
    "CLIConnectionError",
    "CLIInterruptedError",
    "CLINotFoundError",
    "CLIProcessError",
    "CLIResponseParseError",
    "CLITimeoutError",
    "ClaudeCodeAPIError",
    "ClaudeCodeAuthenticationError",
    "ClaudeCodeConnectionError",
    "ClaudeCodeContextWindowExceededError",
    "ClaudeCodeError",
    "ClaudeCodeModel",
    "ClaudeCodeModelNotFoundError",
    "ClaudeCodeModelSettings",
    "ClaudeCodeModels",
    "ClaudeCodeOverloadedError",
    "ClaudeCodePlugin",
    "ClaudeCodeQuotaExceededError",
    "ClaudeCodeRateLimitError",
    "ClaudeCodeRequestRejectedError",
    "ClaudeCodeResponse",
    "ClaudeCodeServerError",
    "ClaudeCodeSettingsError",
    "ClaudeCodeStreamedResponse",
    "ClaudeCodeUnavailableError",
    "DependencyResolutionError",
    "DepsContext",
    "DurableSetupError",
    "IPCConnectionError",
    "IPCError",
    "IPCMessageSizeError",
    "IPCToolExecutionError",
    "InvalidModelIdError",
    "McpResponse",
    "McpTextContent",
    "MessageConversionError",
    "PolicyDecision",
    "PostgresSessionStore",
    "PydanticAITool",
    "SQLiteSessionStore",
    "StructuredOutputError",
    "SubagentDefinition",
    "ToolDefinition",
    "ToolHandler",
    "ToolNotFoundError",
    "ToolValidationError",
    "ToolsetNotRegisteredError",
    "TransportType",
    "TypeHintResolutionError",
    "UnsupportedContentError",
    "UnsupportedDepsTypeError",
    "__version__",
    "allowed_tool_names",
    "check_dbos_sqlite",
    "convert_tool",
    "convert_tool_with_deps",
    "convert_tools_to_mcp_server",
    "create_mcp_server_from_tools",
    "create_tool_wrapper",
    "dbos_config",
    "deserialize_deps",
    "filter_tools_for_request",
    "is_serializable_type",
    "mcp_tool_name",
    "serialize_deps",
    "validate_deps",
]


__getattr__, __dir__ = lazy_exports(globals(), __all__, _EXPORTS, default="claudecode_model.exceptions")
