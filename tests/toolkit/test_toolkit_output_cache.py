"""The tool output cache through real agents: truncation, the cache tools, and history trimming."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

from claudecode_model.toolkit import (
    TOOL_OUTPUT_REF_KEY,
    UNTRUNCATED_METADATA_KEY,
    DirectoryToolOutputStore,
    MemoryToolOutputStore,
    OutputCacheSettings,
    PartsResult,
    ToolOutputCache,
    ToolResultsToolset,
    auto_trim_budget,
    is_ref_id,
    new_ref_id,
    output_cache_toolset,
    trim_tool_outputs,
    trimmed_marker,
    truncated_marker,
)
from tests._support.brains import Script, last_returns

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.filterwarnings("error")

PNG = BinaryContent(b"\x89PNG\r\n\x1a\n", media_type="image/png")
BIG = "".join(f"line {i:03d} of the report\n" for i in range(200))
LINE_BYTES = len("line 000 of the report\n")  # 23
REF_RE = re.compile(r"ref=(out_[0-9a-z]{26})\]")


def ref_in(content: object) -> str:
    match = REF_RE.search(str(content))
    assert match is not None, content
    return match.group(1)


async def test_large_output_is_truncated_and_found_again_with_grep() -> None:
    store = MemoryToolOutputStore()
    seen: dict[str, Any] = {}

    def grep_for_line(messages: list[ModelMessage]) -> list[ModelResponsePart]:
        part = last_returns(messages)["report"]
        seen["report"] = part
        return [ToolCallPart("tool_output_cache_grep", {"ref_id": ref_in(part.content), "pattern": "line 150"})]

    def answer(messages: list[ModelMessage]) -> list[ModelResponsePart]:
        seen["grep"] = last_returns(messages)["tool_output_cache_grep"]
        return [TextPart("found it")]

    script = Script([ToolCallPart("report", {})], grep_for_line, answer)
    agent = Agent(script.model, capabilities=[ToolOutputCache(store, max_output_bytes=100)])

    @agent.tool_plain
    def report() -> str:
        return BIG

    result = await agent.run("summarise the report")
    assert result.output == "found it"
    report_part: ToolReturnPart = seen["report"]
    ref = ref_in(report_part.content)
    assert is_ref_id(ref)
    # Whole lines up to 100 bytes (4 lines of 23 bytes), then the marker naming the ref.
    assert report_part.content == BIG[: 4 * LINE_BYTES] + truncated_marker(ref)
    assert report_part.metadata == {TOOL_OUTPUT_REF_KEY: ref}
    assert await store.load(ref) == BIG
    assert seen["grep"].outcome == "success"
    assert seen["grep"].content == "  151: line 150 of the report"


async def test_cache_tools_output_is_never_truncated_or_saved() -> None:
    store = MemoryToolOutputStore()
    ref = new_ref_id()
    await store.save(ref, BIG)
    script = Script([ToolCallPart("tool_output_cache", {"ref_id": ref})], [TextPart("ok")])
    agent = Agent(script.model, capabilities=[ToolOutputCache(store, max_output_bytes=100)])
    await agent.run("read it")
    part = last_returns(script.seen[-1])["tool_output_cache"]
    assert part.content == "\n".join(f"{i + 1:>5}  line {i:03d} of the report" for i in range(200))
    assert part.metadata is None
    assert len(store) == 1


async def test_reading_a_window_with_offset_and_limit() -> None:
    store = MemoryToolOutputStore()
    ref = new_ref_id()
    await store.save(ref, BIG)
    script = Script([ToolCallPart("tool_output_cache", {"ref_id": ref, "offset": 10, "limit": 2})], [TextPart("ok")])
    await Agent(script.model, capabilities=[ToolOutputCache(store)]).run("read")
    part = last_returns(script.seen[-1])["tool_output_cache"]
    assert part.content == "   11  line 010 of the report\n   12  line 011 of the report"


async def test_small_outputs_reach_the_model_whole_but_are_saved_too() -> None:
    store = MemoryToolOutputStore()
    script = Script([ToolCallPart("small", {})], [TextPart("ok")])
    agent = Agent(script.model, capabilities=[ToolOutputCache(store)])

    @agent.tool_plain
    def small() -> str:
        return "just this"

    await agent.run("go")
    part = last_returns(script.seen[-1])["small"]
    assert part.content == "just this"
    assert await store.load(part.metadata[TOOL_OUTPUT_REF_KEY]) == "just this"


async def test_errors_of_the_cache_tools_are_failed_results() -> None:
    store = MemoryToolOutputStore()
    ref = new_ref_id()
    await store.save(ref, BIG)
    script = Script(
        [
            ToolCallPart("tool_output_cache", {"ref_id": "out_nope"}),
            ToolCallPart("tool_output_cache_grep", {"ref_id": ref, "pattern": "(", "regex": True}),
            ToolCallPart("tool_output_cache_grep", {"ref_id": ref, "pattern": "missing"}),
        ],
        [TextPart("ok")],
    )
    await Agent(script.model, capabilities=[ToolOutputCache(store)]).run("go")
    last = script.seen[-1][-1]
    assert isinstance(last, ModelRequest)
    read, bad_regex, no_match = (p for p in last.parts if isinstance(p, ToolReturnPart))
    assert read.outcome == "failed"
    assert isinstance(read.content, str)
    assert read.content.startswith("Unknown ref_id: 'out_nope'.")
    assert bad_regex.outcome == "failed"
    assert isinstance(bad_regex.content, str)
    assert bad_regex.content.startswith("Invalid regex '(': missing ), unterminated subpattern")
    assert no_match.outcome == "success"
    assert no_match.content == "No matches for: missing"


async def test_invalid_arguments_are_validation_retries() -> None:
    script = Script(
        [ToolCallPart("tool_output_cache", {"ref_id": "x", "offset": -1})],
        [TextPart("ok")],
    )
    await Agent(script.model, capabilities=[ToolOutputCache()]).run("go")
    part = last_returns(script.seen[-1])["tool_output_cache"]
    assert part.outcome == "retried"
    assert part.retry is not None
    assert part.retry.cause == "validation_error"


async def test_tools_marked_untruncated_are_left_alone() -> None:
    store = MemoryToolOutputStore()
    raw = FunctionToolset[None](metadata={UNTRUNCATED_METADATA_KEY: True})

    @raw.tool_plain
    def dump() -> str:
        return BIG

    script = Script([ToolCallPart("dump", {})], [TextPart("ok")])
    await Agent(script.model, toolsets=[raw], capabilities=[ToolOutputCache(store, max_output_bytes=100)]).run("go")
    part = last_returns(script.seen[-1])["dump"]
    assert part.content == BIG
    assert len(store) == 0


async def test_parts_output_keeps_its_images_when_truncated() -> None:
    store = MemoryToolOutputStore()
    script = Script([ToolCallPart("chart", {})], [TextPart("ok")])
    agent = Agent(script.model, capabilities=[ToolOutputCache(store, max_output_bytes=50)])

    @agent.tool_plain
    def chart() -> PartsResult:
        return PartsResult([BIG, PNG])

    await agent.run("go")
    part = last_returns(script.seen[-1])["chart"]
    ref = part.metadata[TOOL_OUTPUT_REF_KEY]
    assert part.content == [BIG[: 2 * LINE_BYTES] + truncated_marker(ref), PNG]
    assert await store.load(ref) == BIG


async def test_refs_outlive_the_session_with_a_directory_store(tmp_path: Path) -> None:
    first = Script([ToolCallPart("report", {})], [TextPart("ok")])
    agent = Agent(first.model, capabilities=[ToolOutputCache(DirectoryToolOutputStore(tmp_path), max_output_bytes=100)])

    @agent.tool_plain
    def report() -> str:
        return BIG

    await agent.run("go")
    ref = ref_in(last_returns(first.seen[-1])["report"].content)

    # A new agent, capability and store object over the same directory: another session, same refs.
    second = Script([ToolCallPart("tool_output_cache_grep", {"ref_id": ref, "pattern": "line 199"})], [TextPart("x")])
    await Agent(second.model, capabilities=[ToolOutputCache(DirectoryToolOutputStore(tmp_path))]).run("go")
    assert last_returns(second.seen[-1])["tool_output_cache_grep"].content == "  200: line 199 of the report"


async def test_the_same_with_toolsets_instead_of_the_capability() -> None:
    store = MemoryToolOutputStore()
    tools = FunctionToolset[None]()

    @tools.tool_plain
    def report() -> str:
        return BIG

    def grep(messages: list[ModelMessage]) -> list[ModelResponsePart]:
        ref = ref_in(last_returns(messages)["report"].content)
        return [ToolCallPart("tool_output_cache_grep", {"ref_id": ref, "pattern": "line 007", "after": 1})]

    script = Script([ToolCallPart("report", {})], grep, [TextPart("ok")])
    toolsets = [ToolResultsToolset(tools, cache=OutputCacheSettings(store, 100)), output_cache_toolset(store)]
    await Agent(script.model, toolsets=toolsets).run("go")
    assert last_returns(script.seen[-1])["tool_output_cache_grep"].content == (
        "    8: line 007 of the report\n    9  line 008 of the report"
    )


# --- trimming --------------------------------------------------------------------------------------------

OUTPUT = "x" * 399 + "\n"  # 400 bytes = 100 tokens


async def run_three_outputs(cache: ToolOutputCache[None]) -> tuple[Script, list[ModelMessage]]:
    script = Script(
        [ToolCallPart("emit", {"name": "a"})],
        [ToolCallPart("emit", {"name": "b"})],
        [ToolCallPart("emit", {"name": "c"})],
        [TextPart("ok")],
    )
    agent = Agent(script.model, capabilities=[cache])

    @agent.tool_plain
    def emit(name: str) -> str:
        return name + OUTPUT

    result = await agent.run("go")
    return script, result.all_messages()


def tool_contents(messages: list[ModelMessage]) -> list[object]:
    return [
        p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]


async def test_trimming_is_off_by_default() -> None:
    script, history = await run_three_outputs(ToolOutputCache())
    assert tool_contents(script.seen[-1]) == ["a" + OUTPUT, "b" + OUTPUT, "c" + OUTPUT]
    assert tool_contents(history) == ["a" + OUTPUT, "b" + OUTPUT, "c" + OUTPUT]


async def test_trimming_replaces_the_oldest_outputs_first() -> None:
    store = MemoryToolOutputStore()
    # 250 tokens = 1000 bytes: two outputs fit, the third pushes the oldest out.
    script, history = await run_three_outputs(ToolOutputCache(store, trim_to_tokens=250))
    assert tool_contents(script.seen[1]) == ["a" + OUTPUT]
    assert tool_contents(script.seen[2]) == ["a" + OUTPUT, "b" + OUTPUT]
    a, b, c = tool_contents(script.seen[3])
    assert (b, c) == ("b" + OUTPUT, "c" + OUTPUT)
    assert a == trimmed_marker(ref_in(a))
    assert await store.load(ref_in(a)) == "a" + OUTPUT  # the same ref the output was saved under
    assert tool_contents(history) == [a, b, c]  # the history itself was rewritten


async def test_trimming_with_a_tight_budget_trims_everything_needed() -> None:
    script, _ = await run_three_outputs(ToolOutputCache(trim_to_tokens=10))
    contents = tool_contents(script.seen[3])
    assert all(str(content).startswith("[tool output trimmed; ref=out_") for content in contents)


def request_with(*parts: Any) -> ModelRequest:
    return ModelRequest(parts=list(parts))


async def test_trim_tool_outputs_rules() -> None:
    store = MemoryToolOutputStore()
    known = new_ref_id()
    truncated_ref = new_ref_id()
    messages: list[ModelMessage] = [
        request_with(UserPromptPart("hi")),
        request_with(ToolReturnPart("t", "1" * 400, metadata={TOOL_OUTPUT_REF_KEY: known, "k": 1})),
        ModelResponse(parts=[TextPart("thinking")]),
        request_with(
            ToolReturnPart("t", "2" * 400, outcome="failed"),  # errors are not outputs: never trimmed
            ToolReturnPart("t", "3" * 300 + truncated_marker(truncated_ref)),
        ),
        request_with(ToolReturnPart("t", "4" * 400)),  # no ref yet: saved when trimmed
        request_with(ToolReturnPart("t", "5" * 400)),
    ]
    original = [m for m in messages]
    result = await trim_tool_outputs(messages, budget_tokens=200, store=store)  # 800 bytes
    assert messages == original  # a new list; nothing changed in place
    contents = tool_contents(result)
    assert contents[0] == trimmed_marker(known)
    assert contents[1] == "2" * 400
    assert contents[2] == trimmed_marker(truncated_ref)
    fourth = contents[3]
    assert fourth == trimmed_marker(ref_in(fourth))
    assert await store.load(ref_in(fourth)) == "4" * 400
    assert contents[4] == "5" * 400  # fits now: newest kept
    first = result[1]
    assert isinstance(first, ModelRequest)
    returned = first.parts[0]
    assert isinstance(returned, ToolReturnPart)
    assert returned.metadata == {TOOL_OUTPUT_REF_KEY: known, "k": 1}
    assert result[0] is messages[0]  # untouched messages are shared
    assert result[2] is messages[2]
    # Trimming again changes nothing and saves nothing more.
    saved = len(store)
    assert tool_contents(await trim_tool_outputs(result, budget_tokens=200, store=store)) == contents
    assert len(store) == saved


async def test_trim_tool_outputs_within_budget_returns_the_same_messages() -> None:
    messages: list[ModelMessage] = [request_with(ToolReturnPart("t", "abc"))]
    result = await trim_tool_outputs(messages, budget_tokens=1, store=MemoryToolOutputStore())
    assert result == messages
    assert result[0] is messages[0]
    with pytest.raises(ValueError, match="budget_tokens"):
        await trim_tool_outputs(messages, budget_tokens=-1, store=MemoryToolOutputStore())


def test_auto_budget() -> None:
    assert auto_trim_budget(None) == 50_000
    assert auto_trim_budget(200_000) == 50_000
    assert auto_trim_budget(32_000) == 20_000
    assert auto_trim_budget(1_000_000) == 100_000


def test_capability_validates_its_settings() -> None:
    with pytest.raises(ValueError, match="trim_to_tokens"):
        ToolOutputCache(trim_to_tokens=-5)
    with pytest.raises(ValueError, match="max_output_bytes"):
        ToolOutputCache(max_output_bytes=0)
