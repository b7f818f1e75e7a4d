"""Unit tests: the offline backend's emulation of the API's prompt caching at ``cache_control`` breakpoints."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from claudecode_model.testing import OfflineBackend, PromptCache
from claudecode_model.testing._cache import shared_prompt_cache
from claudecode_model.testing._sse import CachedUsage, estimate_tokens, message_json, request_text, stream_events

MARK = {"type": "ephemeral"}
TEXT = "x" * 400  # 100 tokens by the backend's estimate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def conversation(turns: int, *, marked: bool = True, model: str = "m") -> dict[str, Any]:
    """A request of ``turns`` user/assistant exchanges then the next user message, marked on its system prompt and
    its last block, as Claude Code marks its requests (the next turn's request extends this one)."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"u{turn:03d}{TEXT}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{turn:03d}{TEXT}"}]})
    last: dict[str, Any] = {"type": "text", "text": f"u{turns:03d}{TEXT}"}
    if marked:
        last["cache_control"] = MARK
    messages.append({"role": "user", "content": [last]})
    system = [{"type": "text", "text": "S" * 400, "cache_control": MARK}]
    tools = [{"name": "probe", "description": "d" * 400, "input_schema": {"type": "object"}}]
    return {"model": model, "system": system, "tools": tools, "messages": messages}


def serve(cache: PromptCache, body: dict[str, Any]) -> CachedUsage:
    return cache.serve(body, estimate_tokens(request_text(body)))


def total(usage: CachedUsage) -> int:
    return usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens


def test_a_first_request_writes_its_prefix_and_the_same_request_then_reads_it():
    cache = PromptCache(min_tokens=0)
    body = conversation(3)
    first, second = serve(cache, body), serve(cache, body)

    whole = estimate_tokens(request_text(body))
    assert first == CachedUsage(input_tokens=0, cache_creation_input_tokens=whole, cache_read_input_tokens=0)
    assert second == CachedUsage(input_tokens=0, cache_creation_input_tokens=0, cache_read_input_tokens=whole)


def test_a_longer_conversation_reads_the_cached_part_and_writes_only_what_is_new():
    cache = PromptCache(min_tokens=0)
    earlier, later = conversation(3), conversation(4)
    serve(cache, earlier)
    usage = serve(cache, later)

    assert usage.cache_read_input_tokens == estimate_tokens(request_text(earlier))
    assert usage.cache_creation_input_tokens == total(usage) - usage.cache_read_input_tokens > 0
    assert usage.input_tokens == 0
    assert total(usage) == estimate_tokens(request_text(later))


def test_a_hit_needs_an_exact_prefix_one_changed_byte_early_on_misses_everything_after_it():
    cache = PromptCache(min_tokens=0)
    serve(cache, conversation(3))
    changed = conversation(3)
    changed["messages"][0]["content"][0]["text"] = "u000y" + TEXT[1:]
    usage = serve(cache, changed)

    # Only the system prompt's own breakpoint (tools + system) is still a hit.
    system_prefix = estimate_tokens(request_text({**changed, "messages": []}))
    assert usage.cache_read_input_tokens == system_prefix
    assert usage.cache_creation_input_tokens == total(usage) - system_prefix


@pytest.mark.parametrize("part", ["tools", "model"])
def test_tools_and_the_model_are_part_of_the_prefix(part: str):
    cache = PromptCache(min_tokens=0)
    serve(cache, conversation(2))
    other = conversation(2, model="other") if part == "model" else conversation(2)
    if part == "tools":
        other["tools"][0]["description"] = "changed"
    assert serve(cache, other).cache_read_input_tokens == 0


def test_moving_the_markers_does_not_change_the_cached_content():
    cache = PromptCache(min_tokens=0)
    serve(cache, conversation(2))
    moved = conversation(2)
    del moved["system"][0]["cache_control"]
    moved["messages"][-1]["content"][0]["cache_control"] = {"type": "ephemeral", "ttl": "5m"}
    assert serve(cache, moved).cache_read_input_tokens == estimate_tokens(request_text(moved))


def test_no_breakpoint_means_no_cache_at_all():
    cache = PromptCache(min_tokens=0)
    body = conversation(2, marked=False)
    del body["system"][0]["cache_control"]
    serve(cache, body)
    usage = serve(cache, body)
    assert usage == CachedUsage(estimate_tokens(request_text(body)), 0, 0)
    assert len(cache) == 0


def test_a_breakpoint_looks_back_twenty_blocks_and_no_further():
    cache = PromptCache(min_tokens=0)
    # conversation(3) is cached at its last block (index 8: a tool, a system block, 7 messages); the last block of
    # conversation(n) is at index 2n + 2, so conversation(13)'s breakpoint is 20 blocks after it, conversation(14)'s
    # 22. Their system prompts carry no marker, so the system prefix is not what they find.
    near, far = conversation(13), conversation(14)
    for body in (near, far):
        del body["system"][0]["cache_control"]
    serve(cache, conversation(3))
    assert serve(cache, near).cache_read_input_tokens == estimate_tokens(request_text(conversation(3)))
    cache.clear()
    serve(cache, conversation(3))
    assert serve(cache, far).cache_read_input_tokens == 0


def test_prefixes_shorter_than_the_minimum_are_not_cached():
    body = conversation(1)
    whole = estimate_tokens(request_text(body))
    short = PromptCache(min_tokens=whole + 1)
    serve(short, body)
    assert serve(short, body) == CachedUsage(whole, 0, 0)

    system_only = PromptCache(min_tokens=whole)  # the system prefix is below it, the whole request is not
    serve(system_only, body)
    assert serve(system_only, body).cache_read_input_tokens == whole
    assert len(system_only) == 1


def test_entries_expire_five_minutes_after_their_last_use():
    clock = Clock()
    cache = PromptCache(min_tokens=0, clock=clock)
    body = conversation(2)
    serve(cache, body)
    clock.now += 299
    assert serve(cache, body).cache_read_input_tokens > 0  # a hit renews the entry
    clock.now += 299
    assert serve(cache, body).cache_read_input_tokens > 0
    clock.now += 301
    assert serve(cache, body).cache_read_input_tokens == 0
    assert serve(cache, body).cache_read_input_tokens > 0


def test_the_cache_does_not_change_the_request():
    cache = PromptCache(min_tokens=0)
    body = conversation(2)
    before = copy.deepcopy(body)
    serve(cache, body)
    assert body == before


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="ttl"):
        PromptCache(ttl=0)
    with pytest.raises(ValueError, match="min_tokens"):
        PromptCache(min_tokens=-1)
    with pytest.raises(TypeError, match="prompt_cache must be a bool or a PromptCache, not str"):
        OfflineBackend(prompt_cache="yes")  # type: ignore[arg-type]


def test_the_backend_uses_the_process_wide_cache_or_its_own():
    own = PromptCache()
    assert OfflineBackend().prompt_cache is None
    assert OfflineBackend(prompt_cache=True).prompt_cache is shared_prompt_cache()
    assert OfflineBackend(prompt_cache=own).prompt_cache is own


def test_the_cache_split_reaches_the_streamed_and_the_json_usage():
    cached = CachedUsage(input_tokens=3, cache_creation_input_tokens=20, cache_read_input_tokens=100)
    response = ModelResponse(parts=[TextPart("hello")])
    body = conversation(1)
    events = stream_events(response, message_id="m", model="m", request_body=body, text_chunk_size=8, cached=cached)
    start = events[0].data["message"]["usage"]
    end = events[-2].data["usage"]
    message = message_json(response, message_id="m", model="m", request_body=body, cached=cached)["usage"]

    for usage in (start, end, message):
        assert usage["input_tokens"] == 3
        assert usage["cache_creation_input_tokens"] == 20
        assert usage["cache_read_input_tokens"] == 100
        assert usage["cache_creation"] == {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 0}


def test_usage_a_brain_sets_wins_over_the_cache():
    cached = CachedUsage(input_tokens=3, cache_creation_input_tokens=20, cache_read_input_tokens=100)
    response = ModelResponse(parts=[TextPart("hello")], usage=RequestUsage(input_tokens=7, output_tokens=2))
    usage = message_json(response, message_id="m", model="m", request_body=conversation(1), cached=cached)["usage"]
    assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["output_tokens"]) == (7, 0, 2)


def test_content_the_api_reads_the_same_is_the_same_prefix():
    def with_tool_result(content: object, **extra: object) -> dict[str, Any]:
        body = conversation(1)
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content, **extra}
        body["messages"].insert(1, {"role": "user", "content": [result]})
        return body

    cache = PromptCache(min_tokens=0)
    serve(cache, with_tool_result([{"type": "text", "text": "p0"}]))
    assert serve(cache, with_tool_result("p0", is_error=False)).cache_creation_input_tokens == 0
    assert serve(cache, with_tool_result("p1")).cache_creation_input_tokens > 0
    assert serve(cache, with_tool_result("p0", is_error=True)).cache_creation_input_tokens > 0
