"""Unit tests of turn planning: continue vs replay, new input, transcript splitting, content conversion."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model import MessageConversionError, UnsupportedContentError
from claudecode_model._history.details import CLI_TOOL_NAME_KEY, HISTORY_DIGEST_KEY, RESUME_AT_KEY
from claudecode_model._history.digest import DigestedHistory, history_digest
from claudecode_model._history.plan import SessionPoint, plan_turn
from claudecode_model._history.replay import TranscriptEntry, transcript_of, transcript_path, write_replay_transcript
from claudecode_model._history.to_anthropic import user_content_blocks

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def _claude_response(history: list, text: str, session: str = "s-1") -> ModelResponse:
    response = ModelResponse(parts=[TextPart(text)], provider_name="claude-code")
    response.provider_details = {
        "session_id": session,
        HISTORY_DIGEST_KEY: history_digest([*history, response]),
        RESUME_AT_KEY: "entry-1",
    }
    return response


def test_first_turn_sends_user_prompt_and_system_prompt_with_instructions():
    messages = [ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart("hi")])]

    plan = plan_turn(messages, "be brief")

    assert plan.system_prompt == "sys\n\nbe brief"
    assert plan.new_input == [{"type": "text", "text": "hi"}]
    assert plan.point is None
    assert plan.replay() == []


def test_history_seen_by_a_session_is_continued_with_only_the_new_input():
    first = ModelRequest(parts=[UserPromptPart("one")])
    response = _claude_response([first], "reply")
    messages: list[ModelMessage] = [first, response, ModelRequest(parts=[UserPromptPart("two")])]

    plan = plan_turn(messages, None)

    digest = response.provider_details[HISTORY_DIGEST_KEY]  # type: ignore[index]
    assert plan.point == SessionPoint(session_id="s-1", message_uuid="entry-1", digest=digest)
    assert plan.continue_input == [{"type": "text", "text": "two"}]
    # Should the session's transcript be gone, the history can still be replayed.
    assert [entry.role for entry in plan.replay()] == ["user", "assistant"]


def test_a_response_without_its_transcript_entry_is_not_continued():
    """Responses recorded before the entry was noted (or by other tools) have no point to branch from."""
    first = ModelRequest(parts=[UserPromptPart("one")])
    response = _claude_response([first], "reply")
    del response.provider_details[RESUME_AT_KEY]  # type: ignore[union-attr]

    plan = plan_turn([first, response, ModelRequest(parts=[UserPromptPart("two")])], None)

    assert plan.point is None
    assert len(plan.replay()) == 2


def test_edited_history_is_replayed_not_continued():
    first = ModelRequest(parts=[UserPromptPart("one")])
    response = _claude_response([first], "reply")
    edited = ModelRequest(parts=[UserPromptPart("one, edited")])

    plan = plan_turn([edited, response, ModelRequest(parts=[UserPromptPart("two")])], None)

    assert plan.point is None
    assert [entry.role for entry in plan.replay()] == ["user", "assistant"]
    assert plan.replay()[0].content == [{"type": "text", "text": "one, edited"}]


def test_session_mode_new_never_continues():
    first = ModelRequest(parts=[UserPromptPart("one")])
    messages: list[ModelMessage] = [
        first,
        _claude_response([first], "reply"),
        ModelRequest(parts=[UserPromptPart("two")]),
    ]

    plan = plan_turn(messages, None, allow_continue=False)

    assert plan.point is None
    assert len(plan.replay()) == 2


def test_history_without_new_input_is_an_error():
    first = ModelRequest(parts=[UserPromptPart("one")])
    with pytest.raises(MessageConversionError):
        plan_turn([first, ModelResponse(parts=[TextPart("x")])], None)


def test_claude_code_response_with_tool_calls_is_split_into_alternating_messages():
    response = ModelResponse(
        parts=[
            TextPart("Let me look."),
            NativeToolCallPart(
                "lookup",
                {"q": "x"},
                tool_call_id="t1",
                provider_details={CLI_TOOL_NAME_KEY: "mcp__pydantic_tools__lookup"},
            ),
            NativeToolReturnPart("lookup", "found", tool_call_id="t1"),
            TextPart("It is found."),
        ]
    )

    entries = transcript_of([ModelRequest(parts=[UserPromptPart("q")]), response])

    assert [entry.role for entry in entries] == ["user", "assistant", "user", "assistant"]
    assert entries[1].content[1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "mcp__pydantic_tools__lookup",
        "input": {"q": "x"},
    }
    assert entries[2].content == [{"type": "tool_result", "tool_use_id": "t1", "content": "found", "is_error": False}]
    assert entries[3].content == [{"type": "text", "text": "It is found."}]


def test_foreign_tool_calls_and_returns_replay_as_tool_use_and_tool_result():
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("q")]),
        ModelResponse(parts=[ToolCallPart("calc", {"a": 1}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("calc", 2, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("2")]),
    ]

    entries = transcript_of(history)

    assert [entry.role for entry in entries] == ["user", "assistant", "user", "assistant"]
    assert entries[2].content[0]["type"] == "tool_result"
    assert entries[2].content[0]["content"] == "2"


def test_images_become_real_content_blocks():
    blocks = user_content_blocks(
        ["look", BinaryContent(PNG, media_type="image/png"), ImageUrl("https://example.com/a.png")]
    )

    assert blocks[0] == {"type": "text", "text": "look"}
    assert blocks[1]["type"] == "image"
    assert blocks[1]["source"]["type"] == "base64"
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}


def test_pdf_becomes_a_document_block():
    [block] = user_content_blocks([BinaryContent(b"%PDF-1.4 ...", media_type="application/pdf")])

    assert block["type"] == "document"
    assert block["source"]["media_type"] == "application/pdf"


@pytest.mark.parametrize(
    ("item", "named"),
    [
        (AudioUrl("https://example.com/a.mp3"), "AudioUrl"),
        (BinaryContent(b"not a png", media_type="image/png"), "image/png"),
        (BinaryContent(b"\x00\x01", media_type="application/zip"), "application/zip"),
    ],
)
def test_unsupported_content_is_a_clear_error_naming_the_type(item: object, named: str):
    with pytest.raises(UnsupportedContentError, match=named):
        user_content_blocks([item])  # type: ignore[list-item]


def test_digest_ignores_timestamps_and_provider_details():
    request = ModelRequest(parts=[UserPromptPart("one")])
    a = ModelResponse(parts=[TextPart("x")], provider_details={"session_id": "a"})
    b = ModelResponse(parts=[TextPart("x")], provider_details={"session_id": "b"})

    assert history_digest([request, a]) == history_digest([request, b])
    assert history_digest([request, a]) != history_digest([request, ModelResponse(parts=[TextPart("y")])])


def test_a_digested_history_extended_gives_the_digest_of_the_whole_conversation():
    first = ModelRequest(parts=[UserPromptPart("one")])
    answer = ModelResponse(parts=[TextPart("x")])
    digested = DigestedHistory([first, answer])
    follow_up = ModelRequest(parts=[UserPromptPart("two")])
    response = ModelResponse(parts=[TextPart("y")])

    assert digested.digest == history_digest([first, answer])
    assert digested.extended([first, answer, follow_up, response]) == history_digest(
        [first, answer, follow_up, response]
    )
    # Other message objects at the start: digested again, not taken from the prefix.
    other = ModelRequest(parts=[UserPromptPart("not one")])
    assert digested.extended([other, answer, follow_up]) == history_digest([other, answer, follow_up])
    assert digested.extended([first]) == history_digest([first])


def test_the_plan_extends_the_history_it_digested_for_the_turns_conversation():
    first = ModelRequest(parts=[UserPromptPart("hello")])
    response = _claude_response([first], "hi")
    follow_up = ModelRequest(parts=[UserPromptPart("more")])
    plan = plan_turn([first, response, follow_up], None)
    answer = ModelResponse(parts=[TextPart("sure")])

    assert plan.digested_history is not None
    assert plan.conversation_digest([first, response, follow_up, answer]) == history_digest(
        [first, response, follow_up, answer]
    )


def _tool_step(index: int) -> tuple[ModelResponse, ModelRequest]:
    call = ModelResponse(parts=[ToolCallPart("probe", {"n": index}, f"toolu_{index}")])
    result = ModelRequest(parts=[ToolReturnPart("probe", f"p{index}", f"toolu_{index}")])
    return call, result


def _counting_digests(monkeypatch: pytest.MonkeyPatch) -> list[ModelMessage]:
    """The messages ``message_digest`` is asked for from now on."""
    from claudecode_model._history import digest as digest_module

    asked: list[ModelMessage] = []
    original = digest_module.message_digest

    def counted(message: ModelMessage) -> str:
        asked.append(message)
        return original(message)

    monkeypatch.setattr(digest_module, "message_digest", counted)
    return asked


@pytest.mark.parametrize("with_history", [True, False], ids=["continued", "new-conversation"])
def test_each_request_of_a_turn_digests_only_the_messages_added_since_the_previous_one(
    monkeypatch: pytest.MonkeyPatch, with_history: bool
) -> None:
    first = ModelRequest(parts=[UserPromptPart("hello")])
    if with_history:
        response = _claude_response([first], "hi")
        conversation: list[ModelMessage] = [first, response, ModelRequest(parts=[UserPromptPart("more")])]
    else:
        conversation = [first]
    plan = plan_turn(conversation, None)
    assert (plan.digested_history is not None) is with_history
    asked = _counting_digests(monkeypatch)

    for index in range(5):
        call, result = _tool_step(index)
        # The request's response is digested as a new object (the turn builds it), then pydantic-ai passes its own.
        assert plan.conversation_digest([*conversation, ModelResponse(parts=call.parts)]) == history_digest(
            [*conversation, call]
        )
        conversation = [*conversation, call, result]

    final = ModelResponse(parts=[TextPart("done")])
    expected = history_digest([*conversation, final])
    asked.clear()
    assert plan.conversation_digest([*conversation, final]) == expected
    # The last tool result, pydantic-ai's response object of the previous request and the final response; not the
    # turn's other messages again.
    assert len(asked) == 3


def test_an_extension_whose_messages_changed_is_digested_again_from_the_first_change() -> None:
    first = ModelRequest(parts=[UserPromptPart("hello")])
    digested = DigestedHistory([first])
    call, result = _tool_step(0)
    later_call, later_result = _tool_step(1)
    assert digested.extended([first, call, result, later_call]) == history_digest([first, call, result, later_call])

    other_result = ModelRequest(parts=[ToolReturnPart("probe", "changed", "toolu_0")])
    assert digested.extended([first, call, other_result, later_call]) == history_digest(
        [first, call, other_result, later_call]
    )
    # Shorter than the last extension, and back to the first one: each is the digest of what it is given.
    assert digested.extended([first, call]) == history_digest([first, call])
    assert digested.extended([first, call, result, later_call, later_result]) == history_digest(
        [first, call, result, later_call, later_result]
    )
    assert digested.digest == history_digest([first])


def test_output_call_answered_by_the_cli_gets_pydantic_ais_verdict_as_text_when_continuing():
    first = ModelRequest(parts=[UserPromptPart("city?")])
    response = ModelResponse(
        parts=[ToolCallPart("final_result", {"name": "Paris"}, "toolu_1")], provider_name="claude-code"
    )
    response.provider_details = {
        "session_id": "s-1",
        HISTORY_DIGEST_KEY: history_digest([first, response]),
        RESUME_AT_KEY: "entry-1",
    }
    retry = ToolReturnPart("final_result", "country: Field required", "toolu_1", outcome="retried")

    continued = plan_turn([first, response, ModelRequest(parts=[retry])], None)
    response.provider_details = {"session_id": "s-1", HISTORY_DIGEST_KEY: "another conversation"}
    replayed = plan_turn([first, response, ModelRequest(parts=[retry])], None)

    assert continued.continue_input is not None
    [block] = continued.continue_input
    assert block["type"] == "text"
    assert "not accepted" in block["text"]
    assert "country: Field required" in block["text"]
    assert "call final_result again" in block["text"]
    # Replayed, the call has no answer in the transcript yet: the verdict is its tool result.
    [replayed_block] = replayed.new_input
    assert replayed_block["type"] == "tool_result"
    assert replayed_block["tool_use_id"] == "toolu_1"


def test_a_replayed_transcript_is_private_in_folders_made_private(tmp_path: Path):
    """A replay may be the first thing written to a config dir: its folders are made 0700 and the file 0600, as
    the CLI makes its own (issue 35), whatever the umask."""
    config = tmp_path / "config"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    old = os.umask(0o022)
    try:
        session = write_replay_transcript(
            [TranscriptEntry("user", [{"type": "text", "text": "a private conversation"}])], env=env, cwd=tmp_path
        )
    finally:
        os.umask(old)
    path = transcript_path(session, env=env, cwd=tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    folder = path.parent
    while folder != tmp_path:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
        folder = folder.parent


def test_a_cache_point_is_left_out_with_a_warning():
    from pydantic_ai.exceptions import UnsupportedSettingWarning
    from pydantic_ai.messages import CachePoint

    with pytest.warns(UnsupportedSettingWarning, match="CachePoint markers are not supported"):
        blocks = user_content_blocks(["before", CachePoint(), "after"])

    assert blocks == [{"type": "text", "text": "before"}, {"type": "text", "text": "after"}]
