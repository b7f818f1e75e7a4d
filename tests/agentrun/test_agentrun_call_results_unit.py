"""pydantic-ai's answers to tool calls as MCP results (no CLI)."""

from __future__ import annotations

import base64

import pytest
from pydantic_ai.messages import BinaryContent, ImageUrl, ToolReturn, ToolReturnPart, UserPromptPart

from claudecode_model._history.cut_results import CLI_INLINE_LIMIT, TEXT_LIMIT, cap_text
from claudecode_model._tools.call_results import (
    block_texts,
    mcp_result,
    not_answered_result,
    results_by_call,
)
from claudecode_model._tools.core import McpResponse

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _texts(result: McpResponse) -> list[str]:
    return block_texts(result["content"])


def _is_error(result: McpResponse) -> bool:
    return result.get("isError", False)


def test_a_plain_result_is_its_text():
    result = mcp_result(ToolReturnPart("add", 4, tool_call_id="toolu_1"))
    assert _texts(result) == ["4"]
    assert not _is_error(result)


def test_a_structured_result_is_compact_json_as_pydantic_ai_sends_it():
    result = mcp_result(ToolReturnPart("where", {"city": "Oslo", "n": [1, 2]}, tool_call_id="toolu_1"))
    assert _texts(result) == ['{"city":"Oslo","n":[1,2]}']


def test_failures_and_retries_set_the_error_flag_without_the_error_wrapper():
    failed = mcp_result(ToolReturnPart("t", "the disk is on fire", tool_call_id="a", outcome="failed"))
    retried = mcp_result(ToolReturnPart("t", "n must be positive", tool_call_id="b", outcome="retried"))
    assert _is_error(failed)
    assert _texts(failed) == ["the disk is on fire"]
    assert _is_error(retried)
    assert _texts(retried) == ["n must be positive"]


def test_validation_errors_of_a_retry_are_one_json_array():
    errors = [{"type": "int_parsing", "loc": ["n"], "msg": "Input should be a valid integer", "input": "x"}]
    result = mcp_result(ToolReturnPart("t", errors, tool_call_id="c", outcome="retried"))
    assert _is_error(result)
    [text] = _texts(result)
    assert text.startswith("[")
    assert "valid integer" in text


def test_a_denial_is_an_ordinary_result_saying_so():
    result = mcp_result(ToolReturnPart("t", "The tool call was denied.", tool_call_id="d", outcome="denied"))
    assert not _is_error(result)
    assert _texts(result) == ["The tool call was denied."]


def test_a_skipped_call_gets_pydantic_ais_not_executed_text():
    text = "Tool not executed - a final result was already processed."
    result = mcp_result(ToolReturnPart("t", text, tool_call_id="e"))
    assert _texts(result) == [text]


def test_an_image_becomes_mcp_image_content():
    image = BinaryContent(PNG, media_type="image/png")
    result = mcp_result(ToolReturnPart("shot", ["Here it is:", image], tool_call_id="f"))
    assert _texts(result) == ["Here it is:"]
    [picture] = [block for block in result["content"] if block["type"] == "image"]
    assert picture["mimeType"] == "image/png"
    assert base64.b64decode(picture["data"]) == PNG


def test_a_lone_image_result_has_only_the_image():
    result = mcp_result(ToolReturnPart("shot", BinaryContent(PNG, media_type="image/png"), tool_call_id="g"))
    assert [block["type"] for block in result["content"]] == ["image"]


def test_a_text_file_is_inline_text_and_a_pdf_an_embedded_resource():
    text_file = BinaryContent(b"line one\nline two", media_type="text/plain")
    pdf = BinaryContent(b"%PDF-1.1 tiny", media_type="application/pdf")
    result = mcp_result(ToolReturnPart("files", [text_file, pdf], tool_call_id="h"))
    assert _texts(result) == ["line one\nline two"]
    [resource] = [block["resource"] for block in result["content"] if block["type"] == "resource"]
    assert resource["mimeType"] == "application/pdf"
    assert base64.b64decode(str(resource["blob"])) == b"%PDF-1.1 tiny"


def test_a_url_is_named_in_text():
    result = mcp_result(ToolReturnPart("link", ImageUrl("https://example.com/cat.png"), tool_call_id="i"))
    assert _texts(result) == ["[image at https://example.com/cat.png]"]


def test_a_tool_return_value_reaches_the_result_as_its_return_value():
    # pydantic-ai unpacks ToolReturn: the part's content is the return value, the rest goes to the user prompt.
    tool_return = ToolReturn(return_value="done", content=["extra for the model"])
    part = ToolReturnPart("t", tool_return.return_value, tool_call_id="j")
    assert _texts(mcp_result(part)) == ["done"]


def test_long_text_is_cut_below_the_inline_limit_with_a_marker():
    long = "x" * 1_200_000
    result = mcp_result(ToolReturnPart("big", long, tool_call_id="k"))
    [text] = _texts(result)
    assert len(text) == TEXT_LIMIT < CLI_INLINE_LIMIT
    assert text.startswith("xxxx")
    assert "tool result cut: showing the first" in text
    assert "of 1,200,000 characters" in text


def test_text_that_fits_is_left_alone():
    assert cap_text("short") == "short"
    exact = "y" * TEXT_LIMIT
    assert cap_text(exact) == exact


def test_the_cut_covers_all_text_blocks_together_and_keeps_images():
    image = BinaryContent(PNG, media_type="image/png")
    result = mcp_result(ToolReturnPart("t", ["a" * 300_000, image, "b" * 300_000], tool_call_id="l"))
    texts = _texts(result)
    assert sum(len(text) for text in texts) <= TEXT_LIMIT
    assert any(block["type"] == "image" for block in result["content"])


def test_a_legacy_retry_prompt_is_an_error_result():
    from pydantic_ai.messages import RetryPromptPart

    with pytest.warns(Warning, match="deprecated"):
        part = RetryPromptPart(content="try again with n > 0", tool_name="square", tool_call_id="m")
    result = mcp_result(part)
    assert _is_error(result)
    assert "try again with n > 0" in _texts(result)[0]


def test_parts_that_answer_no_call_are_refused_and_skipped():
    prompt = UserPromptPart("hello")
    with pytest.raises(TypeError, match="UserPromptPart"):
        mcp_result(prompt)
    answer = ToolReturnPart("t", "ok", tool_call_id="n")
    assert results_by_call([prompt, answer]) == {"n": answer}


def test_a_pending_call_without_an_answer_gets_a_clear_error():
    result = not_answered_result("lookup")
    assert _is_error(result)
    assert _texts(result) == ["The call of lookup was not executed: the agent did not return a result for it."]


def test_the_toolkits_default_budget_keeps_its_ref_marker_inside_the_inline_limit():
    from claudecode_model.toolkit import truncate_tool_output

    shown = truncate_tool_output("é line of output\n" * 10_000, "out_01jd6x4m0c9v7k2q8s3t5w6y7z")
    assert shown.endswith("[tool output truncated; ref=out_01jd6x4m0c9v7k2q8s3t5w6y7z]")
    assert len(shown) < TEXT_LIMIT
    assert cap_text(shown) == shown
