"""Multimodal prompts end to end: images and PDFs reach the API as content blocks; unsupported content fails clearly."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from pydantic_ai import Agent, AudioUrl, BinaryContent, DocumentUrl, ImageUrl, VideoUrl
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserContent, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, MessageConversionError, UnsupportedContentError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
    b"3 0 obj<</Type/Page/MediaBox[0 0 3 3]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def png(width: int = 2, height: int = 2) -> bytes:
    """A small valid red PNG (the CLI decodes images and drops ones it cannot read)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def describes_what_it_got(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Brain: names the kinds of content of the last user prompt."""
    kinds: list[str] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                    kinds = [type(item).__name__ for item in part.content if not isinstance(item, str)]
    return ModelResponse(parts=[TextPart("got: " + ", ".join(kinds))])


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    claude_backend.set_brain(FunctionModel(describes_what_it_got))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 60})
    yield model
    await model.aclose()


def user_blocks(raw: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    """Every block of ``kind`` in the user messages of a raw request."""
    return [
        block
        for message in raw["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


async def test_binary_image_reaches_the_api_as_an_image_block(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    image = png()

    result = await Agent(model).run(["What colour is this?", BinaryContent(image, media_type="image/png")])

    assert result.output == "got: BinaryContent"
    request = claude_backend.requests[-1]
    assert request.has_image()
    [block] = user_blocks(request.raw, "image")
    assert block["source"] == {"type": "base64", "media_type": "image/png", "data": base64.b64encode(image).decode()}
    assert "What colour is this?" in request.user_texts()


async def test_image_url_reaches_the_api_as_an_image_block(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    result = await Agent(model).run(["Describe it.", ImageUrl("https://example.com/cat.png")])

    assert result.output == "got: ImageUrl"
    [block] = user_blocks(claude_backend.requests[-1].raw, "image")
    assert block["source"] == {"type": "url", "url": "https://example.com/cat.png"}


async def test_pdf_reaches_the_api_as_a_document_block(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    async with Agent(model).run_stream(["Summarise.", BinaryContent(PDF, media_type="application/pdf")]) as stream:
        output = await stream.get_output()

    assert output == "got: BinaryContent"
    request = claude_backend.requests[-1]
    assert request.has_document()
    [block] = user_blocks(request.raw, "document")
    assert block["source"] == {
        "type": "base64",
        "media_type": "application/pdf",
        "data": base64.b64encode(PDF).decode(),
    }


async def test_pdf_url_and_image_together_and_kept_for_the_next_turn(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    agent = Agent(model)
    first = await agent.run(
        ["Compare.", DocumentUrl("https://example.com/report.pdf"), BinaryContent(png(), media_type="image/png")]
    )
    second = await agent.run("And now?", message_history=first.all_messages())

    assert first.output == "got: DocumentUrl, BinaryContent"
    [document] = user_blocks(claude_backend.requests[0].raw, "document")
    assert document["source"] == {"type": "url", "url": "https://example.com/report.pdf"}
    # The follow-up continues the session: the earlier image and document are still in the conversation.
    assert second.output == "got: DocumentUrl, BinaryContent"
    assert claude_backend.requests[-1].has_image()
    assert claude_backend.requests[-1].has_document()


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (AudioUrl("https://example.com/song.mp3"), "AudioUrl"),
        (VideoUrl("https://example.com/clip.mp4"), "VideoUrl"),
        (BinaryContent(b"RIFF....WAVEfmt ", media_type="audio/wav"), "audio/wav"),
        (BinaryContent(b"not an image at all", media_type="image/png"), "image/png"),
        (BinaryContent(b"BM....", media_type="image/bmp"), "image/bmp"),
        (DocumentUrl("https://example.com/notes.docx"), "vnd.openxmlformats"),
    ],
)
async def test_unsupported_content_is_a_clear_typed_error(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, content: UserContent, named: str
):
    with pytest.raises(UnsupportedContentError, match=named) as caught:
        await Agent(model).run(["Look at this.", content])
    with pytest.raises(UnsupportedContentError, match=named):
        async with Agent(model).run_stream(["Look at this.", content]) as stream:
            await stream.get_output()

    assert isinstance(caught.value, MessageConversionError)
    assert claude_backend.requests == []  # refused before any CLI was started
