"""Length-prefixed framing: limits, partial input, garbage."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudecode_model.ipc import LENGTH_PREFIX_SIZE, MAX_MESSAGE_SIZE
from claudecode_model.ipc._framing import (
    FrameDecoder,
    FrameSizeError,
    MessageFormatError,
    TruncatedFrameError,
    decode_message,
    encode_body,
    encode_message,
    frame_length,
)
from claudecode_model.ipc._streams import read_frame


def prefix(length: int) -> bytes:
    return struct.pack(">I", length)


def stream_of(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**16)
    reader.feed_data(data)
    reader.feed_eof()
    return reader


def test_constants_are_the_seeds() -> None:
    assert MAX_MESSAGE_SIZE == 10_485_760
    assert LENGTH_PREFIX_SIZE == 4


def test_round_trip_keeps_unicode_and_uses_a_big_endian_prefix() -> None:
    message = {"id": 7, "text": "héllo\nwörld \u2028 🎉"}
    frame = encode_message(message)
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    assert frame == len(body).to_bytes(4, "big") + body
    assert decode_message(frame[4:]) == message


def test_lone_surrogates_are_escaped_not_lost() -> None:
    message = {"text": "bad \udc80 surrogate"}
    frame = encode_message(message)
    frame[4:].decode("utf-8")  # valid UTF-8 on the wire
    assert decode_message(frame[4:]) == message


def test_send_accepts_exactly_the_limit_and_rejects_one_byte_more() -> None:
    exact = b"x" * MAX_MESSAGE_SIZE
    assert encode_body(exact) == prefix(MAX_MESSAGE_SIZE) + exact
    with pytest.raises(FrameSizeError) as caught:
        encode_body(exact + b"x")
    assert caught.value.size == MAX_MESSAGE_SIZE + 1
    assert "MAX_MESSAGE_SIZE" in str(caught.value)


def test_encode_message_checks_the_serialised_size() -> None:
    overhead = len(encode_message({"t": ""})) - LENGTH_PREFIX_SIZE
    fits = {"t": "a" * (MAX_MESSAGE_SIZE - overhead)}
    assert len(encode_message(fits)) == LENGTH_PREFIX_SIZE + MAX_MESSAGE_SIZE
    with pytest.raises(FrameSizeError):
        encode_message({"t": "a" * (MAX_MESSAGE_SIZE - overhead + 1)})


def test_encode_message_rejects_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        encode_message({"x": float("nan")})


def test_receive_accepts_exactly_the_limit_and_rejects_one_byte_more() -> None:
    assert frame_length(prefix(MAX_MESSAGE_SIZE)) == MAX_MESSAGE_SIZE
    with pytest.raises(FrameSizeError):
        frame_length(prefix(MAX_MESSAGE_SIZE + 1))

    decoder = FrameDecoder()
    body = b"y" * MAX_MESSAGE_SIZE
    assert decoder.feed(prefix(MAX_MESSAGE_SIZE) + body) == [body]
    with pytest.raises(FrameSizeError):
        FrameDecoder().feed(prefix(MAX_MESSAGE_SIZE + 1))


async def test_stream_reader_accepts_exactly_the_limit_and_rejects_one_byte_more() -> None:
    body = b"z" * MAX_MESSAGE_SIZE
    assert await read_frame(stream_of(prefix(MAX_MESSAGE_SIZE) + body)) == body
    oversized = stream_of(prefix(MAX_MESSAGE_SIZE + 1) + b"z" * 10)
    with pytest.raises(FrameSizeError):
        await read_frame(oversized)
    assert await oversized.read() == b"z" * 10, "nothing of the body was read"


def test_huge_declared_length_is_rejected_before_any_body_is_buffered() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameSizeError) as caught:
        decoder.feed(prefix(0xFFFFFFFF))
    assert caught.value.size == 0xFFFFFFFF
    assert decoder.buffered == LENGTH_PREFIX_SIZE, "only the prefix was kept"


async def test_stream_reader_rejects_a_huge_declared_length_without_reading() -> None:
    reader = stream_of(prefix(0xFFFFFFFF) + b"tail")
    with pytest.raises(FrameSizeError):
        await read_frame(reader)
    assert await reader.read() == b"tail"


def test_decoder_reassembles_byte_by_byte_input() -> None:
    frames = encode_message({"a": 1}) + encode_message({"b": "two"}) + encode_body(b"")
    decoder = FrameDecoder()
    bodies: list[bytes] = []
    for index in range(len(frames)):
        bodies += decoder.feed(frames[index : index + 1])
    assert [decode_message(b) for b in bodies[:2]] == [{"a": 1}, {"b": "two"}]
    assert bodies[2] == b""
    decoder.check_eof()


def test_decoder_reports_truncation_at_eof() -> None:
    frame = encode_message({"a": 1})
    for cut in (1, LENGTH_PREFIX_SIZE, len(frame) - 1):
        decoder = FrameDecoder()
        assert decoder.feed(frame[:cut]) == []
        with pytest.raises(TruncatedFrameError):
            decoder.check_eof()


async def test_stream_reader_partial_reads() -> None:
    assert await read_frame(stream_of(b"")) is None
    with pytest.raises(TruncatedFrameError):
        await read_frame(stream_of(b"\x00\x00"))
    with pytest.raises(TruncatedFrameError):
        await read_frame(stream_of(prefix(10) + b"short"))

    reader = asyncio.StreamReader()
    frame = encode_message({"slow": True})

    async def trickle() -> None:
        for byte in frame:
            reader.feed_data(bytes([byte]))
            await asyncio.sleep(0)
        reader.feed_eof()

    feeder = asyncio.create_task(trickle())
    body = await read_frame(reader)
    await feeder
    assert body is not None
    assert decode_message(body) == {"slow": True}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty"),
        (b"\xff\xfe{}", "UTF-8"),
        (b"{not json", "JSON"),
        (b"[1, 2]", "list"),
        (b'"text"', "str"),
        (b"NaN", "JSON"),
        (b'{"x": Infinity}', "JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON"),
    ],
)
def test_garbage_bodies_are_format_errors(body: bytes, reason: str) -> None:
    with pytest.raises(MessageFormatError, match=reason):
        decode_message(body)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2048), chunk=st.integers(min_value=1, max_value=64))
def test_fuzz_decoder_never_crashes_on_arbitrary_bytes(data: bytes, chunk: int) -> None:
    decoder = FrameDecoder(limit=1024)
    try:
        for start in range(0, len(data), chunk):
            for body in decoder.feed(data[start : start + chunk]):
                assert len(body) <= 1024
                with contextlib.suppress(MessageFormatError):
                    assert isinstance(decode_message(body), dict)
        decoder.check_eof()
    except (FrameSizeError, TruncatedFrameError):
        pass
    assert decoder.buffered <= 1024 + chunk


@settings(max_examples=50, deadline=None)
@given(
    messages=st.lists(
        st.dictionaries(
            st.text(max_size=8),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children),
                max_leaves=8,
            ),
            max_size=4,
        ),
        max_size=5,
    ),
    chunk=st.integers(min_value=1, max_value=32),
)
def test_fuzz_round_trip_through_arbitrary_chunking(messages: list[dict[str, object]], chunk: int) -> None:
    stream = b"".join(encode_message(m) for m in messages)
    decoder = FrameDecoder()
    received: list[dict[str, object]] = []
    for start in range(0, len(stream), chunk):
        received += [decode_message(body) for body in decoder.feed(stream[start : start + chunk])]
    decoder.check_eof()
    assert received == messages
