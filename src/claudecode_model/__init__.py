"""claudecode-model: pydantic-ai agents on Claude through the Claude Code CLI.

Names are imported lazily, so that light entry points (the IPC bridge process) do not pay for pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from claudecode_model._version import __version__

if TYPE_CHECKING:
    from claudecode_model.exceptions import (
        BridgeStartupError,
        ClaudeCodeAPIError,
        ClaudeCodeAuthenticationError,
        ClaudeCodeConnectionError,
        ClaudeCodeError,
        ClaudeCodeOverloadedError,
        ClaudeCodeRateLimitError,
        ClaudeCodeRequestRejectedError,
        ClaudeCodeServerError,
        ClaudeCodeUnavailableError,
        CLIConnectionError,
        CLIInterruptedError,
        CLINotFoundError,
        CLIProcessError,
        CLIResponseParseError,
        CLITimeoutError,
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
    from claudecode_model.model import ClaudeCodeModel, ClaudeCodeResponse, ClaudeCodeStreamedResponse
    from claudecode_model.settings import ClaudeCodeModelSettings

_EXPORTS: dict[str, str] = {
    "ClaudeCodeModel": "claudecode_model.model",
    "ClaudeCodeResponse": "claudecode_model.model",
    "ClaudeCodeStreamedResponse": "claudecode_model.model",
    "ClaudeCodeModelSettings": "claudecode_model.settings",
    **{
        name: "claudecode_model.exceptions"
        for name in (
            "BridgeStartupError",
            "CLIConnectionError",
            "CLIInterruptedError",
            "CLINotFoundError",
            "CLIProcessError",
            "CLIResponseParseError",
            "CLITimeoutError",
            "ClaudeCodeAPIError",
            "ClaudeCodeAuthenticationError",
            "ClaudeCodeConnectionError",
            "ClaudeCodeError",
            "ClaudeCodeOverloadedError",
            "ClaudeCodeRateLimitError",
            "ClaudeCodeRequestRejectedError",
            "ClaudeCodeServerError",
            "ClaudeCodeUnavailableError",
            "IPCConnectionError",
            "IPCError",
            "IPCMessageSizeError",
            "IPCToolExecutionError",
            "MessageConversionError",
            "StructuredOutputError",
            "ToolNotFoundError",
            "ToolValidationError",
            "ToolsetNotRegisteredError",
            "TypeHintResolutionError",
            "UnsupportedContentError",
            "UnsupportedDepsTypeError",
        )
    },
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'claudecode_model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
