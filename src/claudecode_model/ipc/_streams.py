"""Reading frames from asyncio streams (parent side; the bridge uses ``FrameDecoder`` instead)."""

from __future__ import annotations

import asyncio

from claudecode_model.ipc._constants import LENGTH_PREFIX_SIZE, MAX_MESSAGE_SIZE
from claudecode_model.ipc._framing import TruncatedFrameError, frame_length

__all__ = ["read_frame"]


async def read_frame(reader: asyncio.StreamReader, limit: int = MAX_MESSAGE_SIZE) -> bytes | None:
    """Read one frame body; ``None`` at a clean end of stream.

    Raises ``FrameSizeError`` when the prefix announces more than ``limit`` bytes (nothing more is read), and
    ``TruncatedFrameError`` when the stream ends inside the frame.
    """
    try:
        prefix = await reader.readexactly(LENGTH_PREFIX_SIZE)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise TruncatedFrameError("the IPC connection closed inside a length prefix") from None
    length = frame_length(prefix, limit)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise TruncatedFrameError(
            f"the IPC connection closed after {len(exc.partial)} of {length} message bytes"
        ) from None
