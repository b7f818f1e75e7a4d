"""The process cap's slots, and the history digest's per-message cache (no CLI)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ModelResponsePart, TextPart, UserPromptPart

from claudecode_model._history import digest as _digest
from claudecode_model._history.digest import history_digest
from claudecode_model._process.slots import ProcessSlots, default_max_processes


async def test_a_request_waits_for_a_slot_and_asks_for_an_eviction_first() -> None:
    slots = ProcessSlots(1)
    assert slots.try_acquire()
    evictions: list[bool] = []

    def evict() -> bool:
        evictions.append(True)
        return False

    waiter = asyncio.create_task(slots.acquire(evict))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    assert evictions == [True]
    assert not slots.try_acquire()  # a spare never takes a slot a request waits for
    slots.release()
    await asyncio.wait_for(waiter, 1)
    assert slots.used == 1


async def test_a_cancelled_waiter_passes_its_turn_on() -> None:
    slots = ProcessSlots(1)
    assert slots.try_acquire()
    first = asyncio.create_task(slots.acquire(lambda: False))
    second = asyncio.create_task(slots.acquire(lambda: False))
    await asyncio.sleep(0.01)
    first.cancel()
    slots.release()
    await asyncio.wait_for(second, 1)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert slots.used == 1


def test_the_default_cap_is_at_least_two_and_bad_caps_are_refused() -> None:
    assert default_max_processes() >= 2
    with pytest.raises(ValueError, match="max_processes"):
        ProcessSlots(0)


def test_the_digest_sees_a_replaced_part_or_text_and_is_stable() -> None:
    request = ModelRequest(parts=[UserPromptPart("hello")])
    response = ModelResponse(parts=[TextPart("hi")])
    first = history_digest([request, response])
    assert history_digest([request, response]) == first  # cached: the same objects
    assert history_digest([ModelRequest(parts=[UserPromptPart("hello")]), ModelResponse(parts=[TextPart("hi")])]) == (
        first
    )  # equal content, new objects
    answer = response.parts[0]
    assert isinstance(answer, TextPart)
    answer.content = "changed"
    assert history_digest([request, response]) != first
    response.parts = [TextPart("hi")]
    assert history_digest([request, response]) == first
    response.parts.append(TextPart("more"))
    assert history_digest([request, response]) != first


def test_a_response_rebuilt_from_the_same_parts_reuses_its_digest_and_sees_a_changed_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A turn digests its response when it ends; the next turn digests the response object pydantic-ai kept, another
    # ModelResponse holding the same parts.
    computed: list[object] = []
    canonical = _digest.canonical_digest

    def counted(value: object) -> str:
        computed.append(value)
        return canonical(value)

    monkeypatch.setattr(_digest, "canonical_digest", counted)
    parts: list[ModelResponsePart] = [TextPart("a unique answer"), TextPart("and more")]
    first = _digest.message_digest(ModelResponse(parts=list(parts)))
    assert _digest.message_digest(ModelResponse(parts=list(parts))) == first
    assert len(computed) == 1
    answer = parts[0]
    assert isinstance(answer, TextPart)
    answer.content = "another answer"
    assert _digest.message_digest(ModelResponse(parts=list(parts))) != first
    assert _digest.message_digest(ModelResponse(parts=[TextPart("a unique answer"), TextPart("and more")])) == first
    assert len(computed) == 3
