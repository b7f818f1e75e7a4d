"""``OfflineBackend.hold_next_stream``: pausing a streamed answer mid-way, over plain HTTP (no CLI)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from claudecode_model.testing import OfflineBackend


def body(stream: bool = True) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


def events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


@pytest.fixture
def backend() -> Iterator[OfflineBackend]:
    with OfflineBackend("abcdefghij", text_chunk_size=2) as backend:
        yield backend


def test_a_held_stream_pauses_after_the_given_deltas_until_released(backend: OfflineBackend):
    gate = backend.hold_next_stream(after_deltas=2)
    seen: list[str] = []
    with httpx.Client(timeout=30) as client, client.stream("POST", f"{backend.url}/v1/messages", json=body()) as reply:
        for name, _ in events(reply):
            seen.append(name)
            if name == "content_block_delta" and not gate.is_set() and seen.count(name) == 2:
                # Nothing more can have been sent: the next event only comes once the gate opens.
                assert "message_stop" not in seen
                gate.set()
    deltas = seen.count("content_block_delta")
    assert deltas == 5
    assert seen[-1] == "message_stop"


def test_only_the_next_stream_is_held_and_plain_json_answers_are_not(backend: OfflineBackend):
    gate = backend.hold_next_stream(after_deltas=0)
    with httpx.Client(timeout=30) as client:
        plain = client.post(f"{backend.url}/v1/messages", json=body(stream=False))
        assert plain.json()["content"] == [{"type": "text", "text": "abcdefghij"}]
        gate.set()
        held = client.post(f"{backend.url}/v1/messages", json=body())
        free = client.post(f"{backend.url}/v1/messages", json=body())
    assert held.text.count("content_block_delta") == free.text.count("content_block_delta") == 10  # event + data


def test_stopping_the_backend_ends_a_hold_nobody_releases():
    backend = OfflineBackend("abcdefghij", text_chunk_size=2)
    backend.start()
    backend.hold_next_stream(after_deltas=1)
    first_delta = threading.Event()
    received: list[str] = []

    def read() -> None:
        with httpx.Client(timeout=30) as client:
            try:
                with client.stream("POST", f"{backend.url}/v1/messages", json=body()) as reply:
                    for name, _ in events(reply):
                        received.append(name)
                        if name == "content_block_delta":
                            first_delta.set()
            except httpx.HTTPError:
                received.append("connection lost")

    reader = threading.Thread(target=read)
    reader.start()
    assert first_delta.wait(30)
    backend.stop()
    reader.join(30)
    assert not reader.is_alive()
    assert not backend.running
    # The hold ended with the backend: the in-flight answer was finished during the graceful shutdown.
    assert received[-1] == "message_stop"


def test_hold_validation_and_reset(backend: OfflineBackend):
    with pytest.raises(ValueError, match="after_deltas"):
        backend.hold_next_stream(after_deltas=-1)
    backend.hold_next_stream(after_deltas=1)
    backend.reset()
    with httpx.Client(timeout=30) as client:
        reply = client.post(f"{backend.url}/v1/messages", json=body())
    assert reply.text.count("event: content_block_delta") == 5
