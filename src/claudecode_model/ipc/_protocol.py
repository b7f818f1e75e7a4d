"""Building and checking the IPC messages (standard library only: the bridge imports it at start-up)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from claudecode_model.ipc._types import (
        IPCCancelRequest,
        IPCErrorResponse,
        IPCHelloRequest,
        IPCHelloResponse,
        IPCRequest,
        IPCResponse,
        JsonValue,
        ToolResult,
        ToolResultContent,
        ToolResultImage,
        ToolResultResource,
        ToolSchema,
    )

__all__ = [
    "HELLO_ID",
    "call_request",
    "cancel_request",
    "error_response",
    "hello_request",
    "hello_response",
    "normalize_tool_result",
    "parse_tool_schemas",
    "tool_result_response",
]

HELLO_ID = 0
"""``id`` of the authentication exchange; tool calls use ids from 1 up."""


def hello_request(secret: str) -> IPCHelloRequest:
    """The first frame a bridge sends on a new connection."""
    return {"id": HELLO_ID, "method": "hello", "params": {"secret": secret}}


def hello_response() -> IPCHelloResponse:
    """The server's answer to a valid hello."""
    return {"id": HELLO_ID, "result": {"authenticated": True}}


def call_request(
    request_id: int, name: str, arguments: dict[str, JsonValue], meta: dict[str, JsonValue] | None
) -> IPCRequest:
    """A ``call_tool`` request."""
    request: IPCRequest = {
        "id": request_id,
        "method": "call_tool",
        "params": {"name": name, "arguments": arguments},
    }
    if meta is not None:
        request["params"]["meta"] = meta
    return request


def cancel_request(request_id: int) -> IPCCancelRequest:
    """Asks the server to cancel the call ``request_id``."""
    return {"method": "cancel", "params": {"id": request_id}}


def tool_result_response(request_id: int, result: ToolResult) -> IPCResponse:
    """A successful answer to a call."""
    return {"id": request_id, "result": result}


def error_response(request_id: int | None, message: str, error_type: str) -> IPCErrorResponse:
    """A failed answer; ``error_type`` is usually an exception class name."""
    return {"id": request_id, "error": {"message": message, "type": error_type}}


def normalize_tool_result(value: object) -> ToolResult:
    """Check an MCP-shaped tool result and return it in canonical form.

    Accepts ``{"content": [{"type": "text", "text": str}, ...], "isError": bool}`` (blocks may also be MCP ``image``
    and ``resource`` blocks, as a result pydantic-ai produced can hold images); ``isError`` may be missing
    (False) or spelled ``is_error`` as claude-agent-sdk's ``@tool`` handlers do. Raises ``ValueError``
    otherwise.
    """
    if not isinstance(value, dict):
        raise ValueError(f"a tool result must be a dict, not {type(value).__name__}")
    content = value.get("content")
    if not isinstance(content, list):
        raise ValueError("a tool result needs a 'content' list")
    blocks: list[ToolResultContent | ToolResultImage | ToolResultResource] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        match kind:
            case "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise ValueError(f"content block {index} has no 'text' string")
                blocks.append({"type": "text", "text": text})
            case "image":
                data, mime_type = block.get("data"), block.get("mimeType")
                if not isinstance(data, str) or not data or not isinstance(mime_type, str):
                    raise ValueError(f"image block {index} needs 'data' (base64) and 'mimeType' strings")
                blocks.append({"type": "image", "data": data, "mimeType": mime_type})
            case "resource":
                resource = block.get("resource")
                if not isinstance(resource, dict):
                    raise ValueError(f"resource block {index} needs a 'resource' object")
                blocks.append({"type": "resource", "resource": resource})
            case _:
                raise ValueError(
                    f"content block {index} is {kind!r}; only 'text', 'image' and 'resource' blocks are supported"
                )
    is_error = value.get("isError", value.get("is_error", False))
    if is_error is None:
        is_error = False
    if not isinstance(is_error, bool):
        raise ValueError(f"'isError' must be a bool, not {type(is_error).__name__}")
    return {"content": blocks, "isError": is_error}


def _optional_object(entry: dict[str, object], key: str, where: str) -> dict[str, JsonValue] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: {key!r} must be an object")
    return value


def parse_tool_schemas(value: object) -> list[ToolSchema]:
    """Check the content of a schema file (a JSON array of ``ToolSchema``); raise ``ValueError`` if
    invalid."""
    if not isinstance(value, list):
        raise ValueError("the tool schema file must hold a JSON array")
    schemas: list[ToolSchema] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        where = f"tool schema {index}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not an object")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where} has no name")
        if name in seen:
            raise ValueError(f"tool {name!r} is listed twice")
        seen.add(name)
        description = entry.get("description")
        if not isinstance(description, str):
            raise ValueError(f"tool {name!r} has no description string")
        input_schema = entry.get("input_schema")
        if not isinstance(input_schema, dict):
            raise ValueError(f"tool {name!r} has no input_schema object")
        schema: ToolSchema = {"name": name, "description": description, "input_schema": input_schema}
        annotations = _optional_object(entry, "annotations", f"tool {name!r}")
        if annotations is not None:
            schema["annotations"] = annotations
        meta = _optional_object(entry, "meta", f"tool {name!r}")
        if meta is not None:
            schema["meta"] = meta
        schemas.append(schema)
    return schemas
