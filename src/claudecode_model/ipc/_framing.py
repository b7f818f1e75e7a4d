"""Length-prefixed framing of IPC messages: a 4-byte big-endian body length, then a UTF-8 JSON object.

Standard library only (the bridge imports it at start-up), so its errors are plain exceptions; the parent side
turns them into :mod:`claudecode_model.exceptions` errors where they reach a caller.

``MAX_MESSAGE_SIZE`` is checked on the length prefix, before any body byte is read or any buffer for it
allocated.
"""

from __future__ import annotations

import json
import struct

from claudecode_model.ipc._constants import LENGTH_PREFIX_SIZE, MAX_MESSAGE_SIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "FrameDecoder",
    "FrameError",
    "FrameSizeError",
    "MessageFormatError",
    "TruncatedFrameError",
    "decode_message",
    "encode_body",
    "encode_message",
    "frame_length",
]

_LENGTH = struct.Struct(">I")
_INFINITY = float("inf")
assert _LENGTH.size == LENGTH_PREFIX_SIZE


class FrameError(Exception):
    """The byte stream broke the framing rules; the connection cannot be trusted any more."""


class FrameSizeError(FrameError):
    """A message is larger than the limit (announced by a length prefix, or about to be sent)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"IPC message of {size} bytes exceeds the limit of {limit} bytes (MAX_MESSAGE_SIZE)")
        self.size = size
        self.limit = limit


class TruncatedFrameError(FrameError):
    """The stream ended inside a frame."""


class MessageFormatError(Exception):
    """A complete frame whose body is not a UTF-8 JSON object; the stream itself is still in step."""


def frame_length(prefix: bytes, limit: int = MAX_MESSAGE_SIZE) -> int:
    """Read a length prefix; raise ``FrameSizeError`` if it announces more than ``limit`` bytes."""
    (length,) = _LENGTH.unpack(prefix)
    if length > limit:
        raise FrameSizeError(length, limit)
    return int(length)


def encode_body(body: bytes, limit: int = MAX_MESSAGE_SIZE) -> bytes:
    """Frame ``body``; raise ``FrameSizeError`` if it is larger than ``limit``."""
    if len(body) > limit:
        raise FrameSizeError(len(body), limit)
    return _LENGTH.pack(len(body)) + body


def _to_json(message: Mapping[str, object]) -> bytes:
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a "\udXXX" escape in JSON we received) cannot be UTF-8: escape it.
        return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def encode_message(message: Mapping[str, object], limit: int = MAX_MESSAGE_SIZE) -> bytes:
    """Serialise and frame a message.

    Raises ``FrameSizeError`` if the body would exceed ``limit``, and ``ValueError``/``TypeError`` if the
    message is not JSON-serialisable (NaN and infinities included).
    """
    return encode_body(_to_json(message), limit)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (_INFINITY, -_INFINITY):
        # Valid JSON syntax, but no message holding it could be encoded again (encode_message refuses it).
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def decode_message(body: bytes) -> dict[str, object]:
    """Parse a frame body; raise ``MessageFormatError`` unless it is a non-empty UTF-8 JSON object.

    Whatever this returns ``encode_message`` can encode again: NaN, infinities and numbers too large for a
    float are refused.
    """
    if not body:
        raise MessageFormatError("empty IPC message")
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except UnicodeDecodeError as exc:
        raise MessageFormatError(f"IPC message is not valid UTF-8: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise MessageFormatError(f"IPC message is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MessageFormatError(f"IPC message is a JSON {type(value).__name__}, not an object")
    return value


class FrameDecoder:
    """Incremental decoder for a non-blocking socket: feed it bytes, get back the complete frame bodies.

    A length prefix above ``limit`` raises ``FrameSizeError`` at once, before any of that body is buffered;
    the decoder must then be dropped along with its connection.
    """

    def __init__(self, limit: int = MAX_MESSAGE_SIZE) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._expected: int | None = None

    @property
    def buffered(self) -> int:
        """Number of bytes held that do not form a complete frame yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the bodies of the frames they complete (possibly empty bodies)."""
        self._buffer += data
        bodies: list[bytes] = []
        while True:
            if self._expected is None:
                if len(self._buffer) < LENGTH_PREFIX_SIZE:
                    return bodies
                self._expected = frame_length(bytes(self._buffer[:LENGTH_PREFIX_SIZE]), self._limit)
                del self._buffer[:LENGTH_PREFIX_SIZE]
            if len(self._buffer) < self._expected:
                return bodies
            bodies.append(bytes(self._buffer[: self._expected]))
            del self._buffer[: self._expected]
            self._expected = None

    def check_eof(self) -> None:
        """Call when the stream ended: raise ``TruncatedFrameError`` if it ended inside a frame."""
        if self._expected is not None or self._buffer:
            raise TruncatedFrameError("the IPC connection closed in the middle of a message")
