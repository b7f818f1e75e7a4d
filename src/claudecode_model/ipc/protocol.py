"""The IPC wire protocol under the module path of earlier releases: constants, message types and framing.

Messages are length-prefixed JSON objects: a 4-byte big-endian body length, then the UTF-8 JSON body, at most
:data:`MAX_MESSAGE_SIZE` bytes. :func:`send_message` and :func:`receive_message` frame one message on asyncio
streams. The message types carry an ``id`` (several calls may be in flight on one connection); see
``docs/compatibility.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claudecode_model.exceptions import IPCError, IPCMessageSizeError
from claudecode_model.ipc._constants import (
    LENGTH_PREFIX_SIZE,
    MAX_MESSAGE_SIZE,
    SCHEMA_FILE_PREFIX,
    SOCKET_FILE_PREFIX,
    SOCKET_FILE_SUFFIX,
    SOCKET_PERMISSIONS,
)
from claudecode_model.ipc._framing import FrameError, FrameSizeError, MessageFormatError, decode_message, encode_message
from claudecode_model.ipc._streams import read_frame
from claudecode_model.ipc._types import (
    CallToolParams,
    IPCErrorPayload,
    IPCErrorResponse,
    IPCRequest,
    IPCResponse,
    ToolResult,
    ToolResultContent,
    ToolSchema,
)

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Mapping

__all__ = [
    "LENGTH_PREFIX_SIZE",
    "MAX_MESSAGE_SIZE",
    "SCHEMA_FILE_PREFIX",
    "SOCKET_FILE_PREFIX",
    "SOCKET_FILE_SUFFIX",
    "SOCKET_PERMISSIONS",
    "CallToolParams",
    "IPCErrorPayload",
    "IPCErrorResponse",
    "IPCRequest",
    "IPCResponse",
    "ToolResult",
    "ToolResultContent",
    "ToolSchema",
    "receive_message",
    "send_message",
]


async def send_message(writer: asyncio.StreamWriter, message: Mapping[str, object]) -> None:
    """Send ``message`` as one frame.

    Raises:
        IPCMessageSizeError: the encoded message exceeds :data:`MAX_MESSAGE_SIZE`.
        IPCError: the message cannot be encoded as JSON.
    """
    try:
        frame = encode_message(message)
    except FrameSizeError as error:
        raise IPCMessageSizeError(str(error)) from None
    except (TypeError, ValueError) as error:
        raise IPCError(f"the IPC message cannot be encoded as JSON: {error}") from error
    writer.write(frame)
    await writer.drain()


async def receive_message(reader: asyncio.StreamReader) -> dict[str, object]:
    """Read one frame and decode its JSON object.

    Raises:
        IPCMessageSizeError: the length prefix announces more than :data:`MAX_MESSAGE_SIZE` bytes.
        IPCError: the stream ends (also before a frame starts) or the body is not a JSON object.
    """
    try:
        body = await read_frame(reader)
    except FrameSizeError as error:
        raise IPCMessageSizeError(str(error)) from None
    except FrameError as error:
        raise IPCError(str(error)) from None
    if body is None:
        raise IPCError("the IPC connection closed before a message")
    try:
        return decode_message(body)
    except MessageFormatError as error:
        raise IPCError(f"invalid JSON in IPC message: {error}") from None
