"""The reader of cut tool results without a CLI: the marker, reading by offset, searching, unknown ids, keeping."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

from claudecode_model._history.cut_results import READ_RESULT_TOOL, SEARCH_RESULT_TOOL, TEXT_LIMIT, cap_text
from claudecode_model._tools.core import McpResponse, run_tool_call
from claudecode_model._tools.result_reader import READ_LIMIT, ResultReader

WHOLE = "".join(f"{i:09d}\n" for i in range(60_000))  # 600,000 characters


def text_of(answer: McpResponse) -> str:
    [block] = answer["content"]
    assert block["type"] == "text"
    return block["text"]


async def call(reader: ResultReader, name: str, **arguments: Any) -> McpResponse:
    [tool] = [tool for tool in reader.tools() if tool.name == name]
    return await run_tool_call(tool, arguments, None)


@pytest.fixture
async def reader() -> ResultReader:
    reader = ResultReader()
    reader.server()
    await reader.keep("toolu_a", WHOLE)
    return reader


def test_the_marker_names_the_call_and_where_the_text_was_cut() -> None:
    cut = cap_text(WHOLE, tool_use_id="toolu_a")
    shown = cut.index("\n[tool result cut")

    assert len(cut) <= TEXT_LIMIT
    assert cut[:shown] == WHOLE[:shown]
    assert cut[shown:] == (
        f"\n[tool result cut: showing the first {shown:,} of 600,000 characters; Claude Code shows at most 500,000 "
        f"characters of a tool result. Read the rest with {READ_RESULT_TOOL}(tool_use_id='toolu_a', offset={shown}) "
        f"or search all of it with {SEARCH_RESULT_TOOL}]"
    )
    assert cap_text(WHOLE[:TEXT_LIMIT], tool_use_id="toolu_a") == WHOLE[:TEXT_LIMIT]


async def test_reading_from_an_offset_answers_those_characters_and_where_to_go_on(reader: ResultReader) -> None:
    middle = text_of(await call(reader, "read_tool_result", tool_use_id="toolu_a", offset=500_000, length=30))
    end = text_of(await call(reader, "read_tool_result", tool_use_id="toolu_a", offset=599_990))
    past = text_of(await call(reader, "read_tool_result", tool_use_id="toolu_a", offset=600_000))

    assert (
        middle == WHOLE[500_000:500_030] + "\n[characters 500,000 to 500,030 of 600,000; continue with offset=500030]"
    )
    assert end == WHOLE[599_990:] + "\n[characters 599,990 to 600,000 of 600,000; the end of the result]"
    assert past == "[offset 600,000 is past the end: the result has 600,000 characters]"


async def test_reading_more_than_a_page_is_refused_by_the_schema(reader: ResultReader) -> None:
    answer = await call(reader, "read_tool_result", tool_use_id="toolu_a", length=READ_LIMIT + 1)

    assert answer["isError"]
    assert "400000" in text_of(answer)


async def test_search_answers_offsets_and_the_text_around_each_match(reader: ResultReader) -> None:
    found = text_of(await call(reader, "search_tool_result", tool_use_id="toolu_a", pattern="000059999", context=3))
    several = text_of(
        await call(reader, "search_tool_result", tool_use_id="toolu_a", pattern=r"00005999\d", regex=True, context=0)
    )
    limited = text_of(
        await call(reader, "search_tool_result", tool_use_id="toolu_a", pattern="0000599", context=0, max_matches=2)
    )

    offset = WHOLE.index("000059999")
    assert found == f"[match at offset {offset}; text from offset {offset - 3}]\n{WHOLE[offset - 3 : offset + 12]}"
    assert several.count("[match at offset") == 10
    assert limited.count("[match at offset") == 2
    assert limited.endswith("ask again with a larger max_matches]")
    assert text_of(await call(reader, "search_tool_result", tool_use_id="toolu_a", pattern="x")) == "No matches for: x"


async def test_an_invalid_regex_or_an_unknown_id_is_an_error_naming_it(reader: ResultReader) -> None:
    bad_regex = await call(reader, "search_tool_result", tool_use_id="toolu_a", pattern="(", regex=True)
    unknown = await call(reader, "read_tool_result", tool_use_id="toolu_b")

    assert bad_regex["isError"]
    assert text_of(bad_regex).startswith("Invalid regex '(':")
    assert unknown["isError"]
    assert text_of(unknown).startswith("No cut tool result has tool_use_id 'toolu_b' in this session")
    assert "(cut results: toolu_a)" in text_of(unknown)


async def test_the_history_s_long_returns_are_kept_and_nothing_once_cleared() -> None:
    reader = ResultReader()
    reader.server()
    history = [
        ModelRequest(parts=[UserPromptPart("go")]),
        ModelRequest(
            parts=[
                ToolReturnPart("dump", WHOLE, tool_call_id="toolu_long"),
                ToolReturnPart("dump", WHOLE[:TEXT_LIMIT], tool_call_id="toolu_fits"),
                ToolReturnPart("rows", {"rows": [WHOLE]}, tool_call_id="toolu_json"),
            ]
        ),
    ]

    await reader.keep_history(history)
    json_text = text_of(await call(reader, "read_tool_result", tool_use_id="toolu_json", length=20))

    assert reader.kept == {"toolu_long", "toolu_json"}
    assert json_text.startswith('{"rows":["000000000')
    reader.clear()
    assert reader.kept == frozenset()


async def test_a_reader_not_served_keeps_nothing_and_cuts_without_naming_the_tools() -> None:
    reader = ResultReader()
    response: McpResponse = {"content": [{"type": "text", "text": WHOLE}], "isError": False}

    fitted, whole = await reader.fit(response, "toolu_a")

    assert reader.kept == frozenset()
    assert text_of(fitted) == cap_text(WHOLE)
    assert "read_tool_result" not in text_of(fitted)
    assert whole == WHOLE
