"""The package root: every public name resolves, ``__all__`` is complete, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import claudecode_model
import claudecode_model.exceptions


def test_all_lists_exactly_the_lazy_exports():
    # The names _EXPORTS does not map are the exception classes of claudecode_model.exceptions.
    exceptions = set(claudecode_model.__all__) - {"__version__", *claudecode_model._EXPORTS}
    assert exceptions <= set(claudecode_model.exceptions.__all__)
    assert all(issubclass(getattr(claudecode_model.exceptions, name), Exception) for name in exceptions)
    assert len(exceptions) == 38
    assert len(claudecode_model.__all__) == len(set(claudecode_model.__all__))


def test_every_public_name_resolves():
    for name in claudecode_model.__all__:
        assert getattr(claudecode_model, name) is not None, name


def test_importing_the_root_does_not_import_pydantic_ai():
    code = "import sys, claudecode_model; print('pydantic_ai' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


def test_the_exception_tree_in_the_docstring_matches_the_classes() -> None:
    """``exceptions``' docstring draws the hierarchy; it is the hierarchy."""
    import inspect

    from claudecode_model import exceptions

    classes = [c for c in vars(exceptions).values() if inspect.isclass(c) and c.__module__ == exceptions.__name__]
    lines: list[str] = []

    def draw(cls: type, depth: int) -> None:
        others = ", ".join(base.__name__ for base in cls.__bases__[1:])
        lines.append(f"    {'  ' * depth}* {cls.__name__}" + (f" (also {others})" if others else ""))
        for child in sorted((c for c in classes if c.__bases__[0] is cls), key=lambda c: c.__name__):
            draw(child, depth + 1)

    draw(exceptions.ClaudeCodeError, 0)

    assert "\n".join(lines) in (exceptions.__doc__ or "")


NAMES_OF_0_0_52 = (
    "BridgeStartupError",
    "CLIExecutionError",
    "CLIInterruptedError",
    "CLINotFoundError",
    "CLIResponseParseError",
    "ClaudeCodeError",
    "ClaudeCodeModel",
    "ClaudeCodeModelSettings",
    "DEFAULT_TRANSPORT",
    "DepsBearer",
    "DepsContext",
    "ErrorType",
    "IPCConnectionError",
    "IPCError",
    "IPCMessageSizeError",
    "IPCToolExecutionError",
    "JsonSchema",
    "McpResponse",
    "McpServerConfig",
    "McpTextContent",
    "MissingDepsError",
    "StructuredOutputError",
    "ToolCallContext",
    "ToolNotFoundError",
    "ToolsetNotRegisteredError",
    "TransportType",
    "TypeHintResolutionError",
    "UnsupportedDepsTypeError",
    "convert_mixed_tools_to_mcp_server",
    "convert_tool",
    "convert_tool_with_context",
    "convert_tool_with_deps",
    "convert_tools_to_mcp_server",
    "create_async_handler",
    "create_deps_context",
    "deserialize_deps",
    "is_instance_serializable",
    "is_serializable_type",
    "serialize_deps",
)
"""The root names of claudecode-model 0.0.52 whose code still exists (docs/compatibility.md lists the others)."""


def test_the_root_names_of_0_0_52_still_import() -> None:
    missing = [name for name in NAMES_OF_0_0_52 if name not in claudecode_model.__all__]

    assert missing == []
    assert len(NAMES_OF_0_0_52) == 39
