"""Types of the IPC bridge: the transport choice, the wire messages, the tool handler signatures.

Additions to the original IPC specification, all additive:

- Every request and response carries an ``id`` so several calls can be in flight on one connection; the answer
  with the same ``id`` goes back to the caller. An error about a message without a usable id has ``id: None``.
- ``CallToolParams`` may carry ``meta``: the ``_meta`` object the Claude Code CLI sent with ``tools/call``
  (it holds the Anthropic ``tool_use`` id under ``"claudecode/toolUseId"``).
- Two more messages: the first frame of a connection is an ``IPCHelloRequest`` carrying the session secret,
  answered by an ``IPCHelloResponse``; an ``IPCCancelRequest`` asks the server to cancel a call.
- ``ToolSchema`` may carry MCP ``annotations`` (e.g. ``readOnlyHint``, which lets the CLI run calls in
  parallel) and a ``meta`` object that becomes the tool's ``_meta`` in ``tools/list``.
- ``TransportType`` is a ``TypeAlias`` rather than a ``type`` statement: the package supports Python 3.11.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "CallToolParams",
    "CancelParams",
    "HelloParams",
    "HelloResult",
    "IPCCancelRequest",
    "IPCErrorPayload",
    "IPCErrorResponse",
    "IPCHelloRequest",
    "IPCHelloResponse",
    "IPCRequest",
    "IPCResponse",
    "JsonValue",
    "MetaToolHandler",
    "ToolHandler",
    "ToolResult",
    "ToolResultContent",
    "ToolResultImage",
    "ToolResultResource",
    "ToolSchema",
    "TransportType",
]

JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None"
"""Any JSON value."""

TransportType: TypeAlias = Literal["auto", "stdio", "sdk"]
"""How the agent's tools reach the CLI: ``"sdk"`` (an in-process MCP server), ``"stdio"`` (the IPC bridge) or
``"auto"`` (the best one the installed CLI supports). Defined here, below the core, which imports it (a model
argument)."""


class CallToolParams(TypedDict):
    """Parameters of a ``call_tool`` request."""

    name: str
    arguments: dict[str, JsonValue]
    meta: NotRequired[dict[str, JsonValue]]


class IPCRequest(TypedDict):
    """A tool call, sent by the bridge to the parent process."""

    id: int
    method: Literal["call_tool"]
    params: CallToolParams


class ToolResultContent(TypedDict):
    """A content block of a tool result (MCP ``TextContent``)."""

    type: Literal["text"]
    text: str


class ToolResultImage(TypedDict):
    """An image block of a tool result (MCP ``ImageContent``: base64 data)."""

    type: Literal["image"]
    data: str
    mimeType: str


class ToolResultResource(TypedDict):
    """An embedded resource block of a tool result (MCP ``EmbeddedResource``)."""

    type: Literal["resource"]
    resource: dict[str, object]


class ToolResult(TypedDict):
    """The result of a tool call (MCP ``CallToolResult``): text blocks, and image or resource blocks of a result
    pydantic-ai produced."""

    content: list[ToolResultContent | ToolResultImage | ToolResultResource]
    isError: NotRequired[bool]
    structuredContent: NotRequired[dict[str, object]]
    """Structured data along with the content (an approval of a built-in call carries the input to run it with)."""


class IPCResponse(TypedDict):
    """A successful answer to an ``IPCRequest``."""

    id: int
    result: ToolResult


class IPCErrorPayload(TypedDict):
    """What went wrong (the wire structure, not the ``IPCError`` exception)."""

    message: str
    type: str


class IPCErrorResponse(TypedDict):
    """A failed answer: to an ``IPCRequest`` (the tool raised, ...) or to an unreadable message (``id`` is
    None)."""

    id: int | None
    error: IPCErrorPayload


class HelloParams(TypedDict):
    """Parameters of the authentication frame."""

    secret: str


class IPCHelloRequest(TypedDict):
    """First frame of every connection: proves the bridge was started for this session."""

    id: int
    method: Literal["hello"]
    params: HelloParams


class HelloResult(TypedDict):
    """Body of a successful ``IPCHelloResponse``."""

    authenticated: Literal[True]


class IPCHelloResponse(TypedDict):
    """The server accepted the bridge."""

    id: int
    result: HelloResult


class CancelParams(TypedDict):
    """Parameters of a ``cancel`` request: the ``id`` of the ``IPCRequest`` to cancel."""

    id: int


class IPCCancelRequest(TypedDict):
    """Asks the server to cancel a call in flight; it is not answered, nor is the cancelled call."""

    method: Literal["cancel"]
    params: CancelParams


class ToolSchema(TypedDict):
    """A tool as the bridge lists it; the schema file is a JSON array of these."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]
    annotations: NotRequired[dict[str, JsonValue]]
    meta: NotRequired[dict[str, JsonValue]]


ToolHandler: TypeAlias = Callable[[dict[str, object]], Awaitable[dict[str, object]]]
"""Runs a tool: takes the arguments, returns an MCP-shaped result ``{"content": [...], "isError": bool}``."""

MetaToolHandler: TypeAlias = Callable[[dict[str, object], dict[str, object]], Awaitable[dict[str, object]]]
"""Like ``ToolHandler`` but also receives the call's ``_meta`` (see ``tool_use_id()``)."""
