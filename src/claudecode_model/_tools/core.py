"""The tool core: one tool spec, one handler type, one result type, and the one way a call is run.

Every tool Claude Code can call through this package — a tool registered with ``set_agent_toolsets``, a tool
converted with ``convert_tool``, the agent's own tools run through the run's tool manager, pydantic-ai's output
tools — becomes a :class:`ToolSpec`. A spec's :data:`ToolCallHandler` receives the call's arguments and the
Anthropic ``tool_use`` id and answers with a :data:`McpResponse`. :func:`run_tool_call` is the single place a
call is run, on both transports (the in-process server and the IPC session): a handler's exception becomes an
``isError`` result carrying its message (and is logged); ``asyncio.CancelledError`` always propagates.

Results follow what pydantic-ai sends any other model: a ``str`` unchanged, ``None`` as ``""``, anything else
as compact JSON in insertion order; a value that is already MCP-shaped (text blocks only) is passed through;
files cannot be sent this way and raise ``ValueError``. Text longer than Claude Code shows of one result is cut with
a marker (:func:`~claudecode_model._history.cut_results.cap_text`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

import jsonschema
import pydantic
from pydantic_ai.messages import ToolReturnPart

from claudecode_model._history.cut_results import TEXT_LIMIT, cap_text
from claudecode_model._tools.execution import DEFAULT_SERVER_NAME
from claudecode_model.exceptions import MissingDepsError, ToolValidationError
from claudecode_model.ipc._constants import TOOL_USE_ID_META_KEY
from claudecode_model.ipc._types import ToolResult, ToolResultContent, ToolResultImage, ToolResultResource

if TYPE_CHECKING:
    from claudecode_model.deps_support import ToolCallContext

__all__ = [
    "DEFAULT_SERVER_NAME",
    "TOOL_USE_ID_META_KEY",
    "AgentToolset",
    "JsonSchema",
    "McpContent",
    "McpResponse",
    "McpTextContent",
    "PydanticAITool",
    "ToolCallHandler",
    "ToolInvoker",
    "ToolSpec",
    "allowed_tool_names",
    "checked_server_name",
    "checked_tool_name",
    "format_result",
    "mcp_input_schema",
    "mcp_tool_name",
    "parameters_json_schema",
    "run_tool_call",
    "sdk_result",
    "takes_run_context",
    "text_result",
    "tool_spec",
    "unique_specs",
]

logger = logging.getLogger(__name__)

JsonSchema = dict[str, Any]
"""A JSON Schema object."""

McpTextContent = ToolResultContent
"""One text block of an MCP tool result."""

McpContent = ToolResultContent | ToolResultImage | ToolResultResource
"""One block of an MCP tool result: text, or an image or resource of a result pydantic-ai produced."""

McpResponse = ToolResult
"""An MCP tool result: text blocks and the error flag (``isError``; absent means ``False``)."""

ToolCallHandler = Callable[[dict[str, Any], str | None], Awaitable[McpResponse]]
"""``async (arguments, tool_use_id) -> McpResponse``; ``tool_use_id`` is ``None`` if the client sent none."""


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


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as an MCP server serves it.

    ``handler`` receives the raw arguments (the handler validates them) and the ``tool_use`` id.
    ``read_only`` advertises ``readOnlyHint``, which lets Claude Code run several calls at once.
    """

    name: str
    description: str
    input_schema: JsonSchema
    handler: ToolCallHandler
    read_only: bool = False
    check_arguments: bool = False
    """Check the arguments against ``input_schema`` before the handler runs (an ``isError`` result if they fail)."""


# --- names ---------------------------------------------------------------------------------------------------


def checked_tool_name(name: object, culprit: object = None) -> str:
    """``name`` itself, or a :class:`ToolValidationError` if it is not a non-empty string."""
    if not isinstance(name, str) or not name.strip():
        where = f" (tool {culprit!r})" if culprit is not None else ""
        raise ToolValidationError(f"Tool name cannot be empty: a tool needs a non-empty string, got {name!r}{where}.")
    return name


def checked_server_name(name: object) -> str:
    """``name`` itself, or a :class:`ToolValidationError` if it is not a non-empty string."""
    if not isinstance(name, str) or not name.strip():
        raise ToolValidationError("The MCP server name must be a non-empty string.")
    return name


def unique_specs(specs: Iterable[ToolSpec]) -> dict[str, ToolSpec]:
    """The specs by name; :class:`ToolValidationError` for an empty or a repeated name."""
    by_name: dict[str, ToolSpec] = {}
    for spec in specs:
        checked_tool_name(spec.name)
        if spec.name in by_name:
            raise ToolValidationError(f"Two tools are named {spec.name!r}; tool names must be unique per server.")
        by_name[spec.name] = spec
    return by_name


def mcp_tool_name(tool_name: str, server_name: str = DEFAULT_SERVER_NAME) -> str:
    """The name Claude Code gives a tool of an MCP server: ``mcp__<server_name>__<tool_name>``."""
    return f"mcp__{server_name}__{tool_name}"


def allowed_tool_names(server_name: str = DEFAULT_SERVER_NAME, tool_names: Iterable[str] | None = None) -> list[str]:
    """``allowed_tools`` entries for a server: each named tool, or the whole server (``mcp__<server>``)."""
    if tool_names is None:
        return [f"mcp__{server_name}"]
    return [mcp_tool_name(name, server_name) for name in tool_names]


# --- schemas -------------------------------------------------------------------------------------------------

_SCHEMA_PATTERNS: tuple[tuple[str, ...], ...] = (
    ("parameters_json_schema",),
    ("function_schema", "json_schema"),
    ("tool_def", "parameters_json_schema"),
)


def parameters_json_schema(tool: object) -> JsonSchema:
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
            value = getattr(value, attribute, None)
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
    raise ToolValidationError(f"Cannot extract JSON schema from tool {name!r} (tried {tried}).")


def mcp_input_schema(schema: JsonSchema) -> JsonSchema:
    """An MCP ``inputSchema`` must be an object schema with ``properties``; fill in what a bare one lacks."""
    if schema.get("type") == "object" and "properties" in schema:
        return schema
    return {"type": "object", "properties": {}, **schema}


# --- results -------------------------------------------------------------------------------------------------


def text_result(text: str, *, is_error: bool = False) -> McpResponse:
    """A result of one text block."""
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


def format_result(value: object, *, limit: int | None = TEXT_LIMIT) -> McpResponse:
    """Turn a tool's return value into a :data:`McpResponse` (the rules are in the module documentation); text above
    ``limit`` characters is cut with a marker (``None``: never cut)."""
    if _is_mcp_shaped(value):
        texts = [str(item["text"]) for item in value["content"]]
        is_error = bool(value.get("isError", False) or value.get("is_error", False))
        if limit is not None and sum(len(text) for text in texts) > limit:
            return text_result(cap_text("\n".join(texts), limit), is_error=is_error)
        items: list[McpContent] = [{"type": "text", "text": text} for text in texts]
        return {"content": items, "isError": is_error}
    part = ToolReturnPart(tool_name="", content=value)
    if part.files:
        kinds = ", ".join(sorted({type(file).__name__ for file in part.files}))
        raise ValueError(f"The tool returned files ({kinds}); tools served over MCP here can only return text.")
    text = part.model_response_str()
    return text_result(text if limit is None else cap_text(text, limit))


def sdk_result(response: McpResponse) -> dict[str, Any]:
    """The SDK reads a handler result's error flag as ``is_error``; MCP calls it ``isError``: set both."""
    is_error = bool(response.get("isError", False))
    return {"content": response["content"], "isError": is_error, "is_error": is_error}


def _log_failure(name: str, error: Exception) -> None:
    logger.warning(
        "Tool %r failed: %s: %s", name, type(error).__name__, error, exc_info=logger.isEnabledFor(logging.DEBUG)
    )


def _check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    try:
        jsonschema.validate(instance=dict(arguments), schema=spec.input_schema)
    except jsonschema.ValidationError as error:
        raise ValueError(f"Invalid arguments for tool {spec.name!r}: {error.message}") from None


async def run_tool_call(spec: ToolSpec, arguments: Mapping[str, Any], tool_use_id: str | None) -> McpResponse:
    """Run one call of ``spec``: the handler's answer, or an ``isError`` result carrying its exception's message."""
    try:
        if spec.check_arguments:
            _check_arguments(spec, arguments)
        return await spec.handler(dict(arguments), tool_use_id)
    except Exception as error:  # CancelledError is a BaseException and propagates
        _log_failure(spec.name, error)
        return text_result(str(error) or type(error).__name__, is_error=True)


# --- invoking a pydantic-ai tool -----------------------------------------------------------------------------


def takes_run_context(tool: object) -> bool:
    """Whether ``tool`` says its function takes a run context first (``takes_ctx`` is ``True`` itself)."""
    return getattr(tool, "takes_ctx", False) is True


@dataclass(frozen=True, slots=True)
class ToolInvoker:
    """Calls one tool function with MCP arguments, the way pydantic-ai would."""

    name: str
    function: Callable[..., Any]
    takes_ctx: bool
    function_schema: Any | None

    @classmethod
    def of(cls, tool: object) -> ToolInvoker:
        """The invoker of a tool (anything with ``name`` and ``function``).

        Raises:
            ToolValidationError: an empty name, or no callable function.
        """
        name = checked_tool_name(getattr(tool, "name", None), tool)
        function = getattr(tool, "function", None)
        if function is None or not callable(function):
            raise ToolValidationError(
                f"Tool {name!r} has no function registered (got {function!r}); each tool needs a callable function."
            )
        schema = getattr(tool, "function_schema", None)
        # pydantic-ai's FunctionSchema validates (and converts) the arguments and knows how to call the
        # function (positional fields, sync functions in a thread); use it when it belongs to this function.
        usable = schema is not None and getattr(schema, "function", None) is function and hasattr(schema, "call")
        return cls(name, function, takes_run_context(tool), schema if usable else None)

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

    def context_for(self, deps_context: ToolCallContext[Any] | None, tool_use_id: str | None) -> object:
        """The ``ctx`` argument of one call (``None`` for a tool that takes none)."""
        return deps_context.for_call(self.name, tool_use_id) if deps_context is not None else None


def tool_spec(
    tool: object,
    *,
    deps_context: ToolCallContext[Any] | None = None,
    read_only: bool = False,
    check_arguments: bool = False,
) -> ToolSpec:
    """A pydantic-ai tool (or anything with ``name``, ``function`` and a parameters schema) as a :class:`ToolSpec`.

    The handler validates the arguments with the tool's pydantic-ai schema when it has one, runs sync functions in
    a worker thread, formats the return value with :func:`format_result` and gives a tool that takes a context a
    :class:`~claudecode_model.deps_support.ToolCallContext` carrying the call's tool name and ``tool_use`` id.
    ``check_arguments=True`` checks the arguments against the JSON schema first, as servers of this package do
    for registered tools (the schema check the SDK's own in-process servers make).

    Raises:
        ToolValidationError: an empty name, no function, or a parameters schema that is missing or not a dict.
        MissingDepsError: (a ``NotImplementedError``) the tool takes a ``RunContext`` and no ``deps_context`` was
            given.
    """
    invoker = ToolInvoker.of(tool)
    if invoker.takes_ctx and deps_context is None:
        raise MissingDepsError(
            f"Tool {invoker.name!r} takes a RunContext: tools with takes_ctx=True are not supported without deps; "
            "convert it with convert_tool_with_deps(tool, deps) (experimental), or let ClaudeCodeModel run it with "
            "the agent's own RunContext."
        )

    async def handler(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        return format_result(await invoker(arguments, invoker.context_for(deps_context, tool_use_id)))

    return ToolSpec(
        name=invoker.name,
        description=getattr(tool, "description", None) or "",
        input_schema=mcp_input_schema(parameters_json_schema(tool)),
        handler=handler,
        read_only=read_only,
        check_arguments=check_arguments,
    )
