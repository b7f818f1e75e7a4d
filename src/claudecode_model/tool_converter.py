"""Low-level conversion of one pydantic-ai tool into a Claude Agent SDK ``SdkMcpTool``.

:func:`convert_tool` keeps the tool's name, description and JSON schema and wraps its function (sync
or async) in an async MCP handler. The handler validates the arguments with the tool's pydantic-ai schema
when it has one, runs sync functions in a worker thread (as pydantic-ai does), and answers with an
:class:`McpResponse`:

* the text Claude sees is exactly what pydantic-ai would send any other model: a ``str`` unchanged,
  ``None`` as ``""``, anything else as compact JSON in insertion order (keys are not sorted; pydantic models,
  dataclasses, dates and the like are serialised by pydantic);
* a value that is already MCP-shaped (``{"content": [{"type": "text", "text": ...}], "isError": ...}``) is
  passed through (text blocks only; other dicts are JSON like any value);
* files (images, documents) cannot be sent this way: returning one raises ``ValueError``, which the handler
  reports as an error result rather than dropping the file silently;
* an exception becomes an ``isError`` response carrying its message (and is logged);
  ``asyncio.CancelledError`` always propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, TypeGuard, runtime_checkable

import pydantic
from claude_agent_sdk import SdkMcpTool
from mcp.types import ToolAnnotations
from pydantic_ai.messages import ToolReturnPart

from claudecode_model.deps_support import DepsContext
from claudecode_model.exceptions import ToolValidationError

__all__ = [
    "AgentToolset",
    "JsonSchema",
    "McpHandler",
    "McpResponse",
    "McpTextContent",
    "PydanticAITool",
    "convert_tool",
    "convert_tool_with_deps",
]

logger = logging.getLogger(__name__)

JsonSchema = dict[str, Any]
"""A JSON Schema object."""


class McpTextContent(TypedDict):
    """One text block of an MCP tool result."""

    type: Literal["text"]
    text: str


class McpResponse(TypedDict):
    """An MCP tool result: text blocks and the error flag."""

    content: list[McpTextContent]
    isError: bool


McpHandler = Callable[[dict[str, Any]], Awaitable[McpResponse]]
"""An async tool handler: MCP arguments in, :class:`McpResponse` out."""


@runtime_checkable
class PydanticAITool(Protocol):
    """What the conversion reads from a tool (pydantic-ai's ``Tool`` satisfies it).

    Optional attributes, read when present: ``takes_ctx`` (the function's first parameter is a run context),
    ``parameters_json_schema``, ``function_schema`` (pydantic-ai's schema and validator) and ``tool_def``.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def function(self) -> Callable[..., Any]: ...


@runtime_checkable
class AgentToolset(Protocol):
    """A toolset holding tools by name, such as ``agent._function_toolset`` or any ``FunctionToolset``.

    ``tools`` is read-only here (a ``Mapping``), so a ``dict[str, Tool[Deps]]`` satisfies it.
    """

    @property
    def tools(self) -> Mapping[str, PydanticAITool]: ...


# --- validation ---------------------------------------------------------------------------------------------


def _validated_name(tool: object) -> str:
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise ToolValidationError(f"Tool name must be a non-empty string, got {name!r} (tool {tool!r}).")
    return name


def _validated_function(tool: object, name: str) -> Callable[..., Any]:
    function = getattr(tool, "function", None)
    if function is None or not callable(function):
        raise ToolValidationError(f"Tool {name!r} has no callable function registered (got {function!r}).")
    return function  # type: ignore[no-any-return]


_SCHEMA_PATTERNS: tuple[tuple[str, ...], ...] = (
    ("parameters_json_schema",),
    ("function_schema", "json_schema"),
    ("tool_def", "parameters_json_schema"),
)


def _get_parameters_json_schema(tool: object) -> JsonSchema:
    """Read a tool's parameters JSON schema.

    Tries ``tool.parameters_json_schema``, ``tool.function_schema.json_schema`` and
    ``tool.tool_def.parameters_json_schema`` in that order; a pattern fails when an attribute on its path is
    missing or ``None``. The first pattern that yields a value decides.

    Raises:
        ToolValidationError: every pattern failed, or the value found is not a ``dict``.
    """
    name = getattr(tool, "name", repr(tool))
    for path in _SCHEMA_PATTERNS:
        value: object = tool
        for attribute in path:
            try:
                value = getattr(value, attribute)
            except AttributeError:
                value = None
            if value is None:
                break
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ToolValidationError(
                f"The parameters schema of tool {name!r} ({'.'.join(path)}) must be a dict, "
                f"got {type(value).__qualname__}."
            )
        return value
    tried = ", ".join(".".join(path) for path in _SCHEMA_PATTERNS)
    raise ToolValidationError(f"Cannot find a parameters JSON schema for tool {name!r} (tried {tried}).")


def _mcp_input_schema(schema: JsonSchema) -> JsonSchema:
    """An MCP ``inputSchema`` must be an object schema with ``properties``; fill in what a bare one lacks."""
    if schema.get("type") == "object" and "properties" in schema:
        return schema
    return {"type": "object", "properties": {}, **schema}


# --- invocation ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Invoker:
    """Calls one tool function with MCP arguments, the way pydantic-ai would."""

    name: str
    function: Callable[..., Any]
    takes_ctx: bool
    function_schema: Any | None

    @classmethod
    def of(cls, tool: object) -> _Invoker:
        name = _validated_name(tool)
        function = _validated_function(tool, name)
        schema = getattr(tool, "function_schema", None)
        # pydantic-ai's FunctionSchema validates (and converts) the arguments and knows how to call the
        # function (positional fields, sync functions in a thread); use it when it belongs to this function.
        usable = schema is not None and getattr(schema, "function", None) is function and hasattr(schema, "call")
        return cls(name, function, bool(getattr(tool, "takes_ctx", False)), schema if usable else None)

    async def __call__(self, arguments: dict[str, Any], ctx: object) -> Any:
        if self.function_schema is not None:
            try:
                validated = self.function_schema.validator.validate_python(arguments)
            except pydantic.ValidationError as e:
                details = e.json(include_url=False, include_context=False)
                raise ValueError(f"Invalid arguments for tool {self.name!r}: {details}") from e
            return await self.function_schema.call(validated, ctx)
        args = (ctx,) if self.takes_ctx else ()
        if inspect.iscoroutinefunction(self.function):
            return await self.function(*args, **arguments)
        result = await asyncio.to_thread(self.function, *args, **arguments)
        if inspect.isawaitable(result):
            result = await result
        return result


# --- results ------------------------------------------------------------------------------------------------


def _text_response(text: str, *, is_error: bool = False) -> McpResponse:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _is_mcp_shaped(value: object) -> TypeGuard[dict[str, Any]]:
    if not isinstance(value, dict) or "content" not in value or not set(value) <= {"content", "isError", "is_error"}:
        return False
    content = value["content"]
    flags_ok = all(isinstance(value.get(key, False), bool) for key in ("isError", "is_error"))
    return (
        flags_ok
        and isinstance(content, list)
        and all(
            isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
            for item in content
        )
    )


def _format_return_value_as_mcp(value: object) -> McpResponse:
    """Turn a tool's return value into an :class:`McpResponse` (the rules are in the module documentation)."""
    if _is_mcp_shaped(value):
        items: list[McpTextContent] = [{"type": "text", "text": item["text"]} for item in value["content"]]
        return {
            "content": items,
            "isError": bool(value.get("isError", False) or value.get("is_error", False)),
        }
    part = ToolReturnPart(tool_name="", content=value)
    if part.files:
        kinds = ", ".join(sorted({type(file).__name__ for file in part.files}))
        raise ValueError(f"The tool returned files ({kinds}); tools served over MCP here can only return text.")
    return _text_response(part.model_response_str())


def _error_message(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _create_async_handler(tool: object, deps_context: DepsContext[Any] | None = None) -> McpHandler:
    """Wrap a tool's function in an async handler that never raises (except on cancellation).

    Raises:
        ToolValidationError: the tool has an empty name or no function.
        NotImplementedError: the tool takes a run context and no ``deps_context`` was given.
    """
    invoker = _Invoker.of(tool)
    if invoker.takes_ctx and deps_context is None:
        raise NotImplementedError(
            f"Tool {invoker.name!r} takes a RunContext; convert it with convert_tool_with_deps(tool, deps) "
            "(experimental), or let ClaudeCodeModel run it with the agent's own RunContext."
        )

    async def handler(arguments: dict[str, Any]) -> McpResponse:
        ctx = deps_context.for_call(invoker.name) if deps_context is not None else None
        try:
            value = await invoker(arguments, ctx)
            return _format_return_value_as_mcp(value)
        except Exception as e:  # CancelledError is a BaseException and propagates
            logger.warning(
                "Tool %r failed: %s: %s",
                invoker.name,
                type(e).__name__,
                e,
                exc_info=logger.isEnabledFor(logging.DEBUG),
            )
            return _text_response(_error_message(e), is_error=True)

    return handler


def _sdk_result(response: McpResponse) -> dict[str, Any]:
    """The SDK reads a handler result's error flag as ``is_error``; MCP calls it ``isError``: set both."""
    return {**response, "is_error": response["isError"]}


def _sdk_tool(tool: object, handler: McpHandler, *, read_only: bool) -> SdkMcpTool[Any]:
    name = _validated_name(tool)

    async def sdk_handler(arguments: dict[str, Any]) -> dict[str, Any]:
        return _sdk_result(await handler(arguments))

    return SdkMcpTool(
        name=name,
        description=getattr(tool, "description", None) or "",
        input_schema=_mcp_input_schema(_get_parameters_json_schema(tool)),
        handler=sdk_handler,
        annotations=ToolAnnotations(read_only_hint=True) if read_only else None,
    )


def convert_tool(tool: PydanticAITool, *, read_only: bool = False) -> SdkMcpTool[Any]:
    """Convert a pydantic-ai tool (a ``Tool``, or anything matching :class:`PydanticAITool`) to an SdkMcpTool.

    The handler returns an MCP result dict (``content``, ``isError``, and ``is_error`` for the SDK).
    ``read_only=True`` marks the tool ``readOnlyHint``, which lets Claude Code run several calls at once.

    Raises:
        ToolValidationError: empty name, no function, or a parameters schema that is missing or not a dict.
        NotImplementedError: the tool takes a ``RunContext`` (use :func:`convert_tool_with_deps`).
    """
    return _sdk_tool(tool, _create_async_handler(tool), read_only=read_only)


def convert_tool_with_deps(tool: PydanticAITool, deps: object, *, read_only: bool = False) -> SdkMcpTool[Any]:
    """Convert a tool whose function takes a ``RunContext``, injecting ``deps`` via a :class:`DepsContext`.

    Experimental: the API may change. ``deps`` must be serialisable (see
    :mod:`claudecode_model.deps_support`); the tool's ``ctx`` argument is a :class:`DepsContext` whose
    ``deps`` is this very object.

    Raises:
        UnsupportedDepsTypeError: ``deps`` is not serialisable.
        TypeHintResolutionError: a dataclass in ``deps`` has annotations naming undefined types.
        ToolValidationError: empty name, no function, or a parameters schema that is missing or not a dict.
    """
    context: DepsContext[Any] = DepsContext(deps)
    return _sdk_tool(tool, _create_async_handler(tool, context), read_only=read_only)
