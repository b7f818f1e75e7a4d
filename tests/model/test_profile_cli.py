"""The model's profile claims exactly the inputs the model accepts."""

from __future__ import annotations

import base64

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl, UserContent, VideoUrl

from claudecode_model import ClaudeCodeModel, UnsupportedContentError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def claimed(model: ClaudeCodeModel, item: UserContent) -> bool:
    profile = model.profile
    match item:
        case AudioUrl() | BinaryContent(is_audio=True):
            return profile.get("supports_audio_file_input", True)
        case VideoUrl() | BinaryContent(is_video=True):
            return profile.get("supports_video_input", True)
        case ImageUrl() | BinaryContent(is_image=True):
            return profile.get("supports_image_input", True)
        case DocumentUrl() | BinaryContent():
            media_types = profile.get("supported_document_media_types")
            return profile.get("supports_document_input", True) and (
                media_types is None or item.media_type in media_types
            )
        case _:
            raise AssertionError(item)


@pytest.mark.parametrize(
    "item",
    [
        BinaryContent(PNG, media_type="image/png"),
        BinaryContent(b"%PDF-1.4 offline", media_type="application/pdf"),
        BinaryContent(b"plain words", media_type="text/plain"),
        AudioUrl("https://example.com/a.mp3"),
        BinaryContent(b"ID3audio", media_type="audio/mpeg"),
        VideoUrl("https://example.com/v.mp4"),
        BinaryContent(b"PK\x03\x04", media_type=DOCX),
        DocumentUrl("https://example.com/report.docx", media_type=DOCX),
    ],
    ids=["png", "pdf", "text", "audio-url", "audio-bytes", "video-url", "docx-bytes", "docx-url"],
)
async def test_the_profile_claims_what_the_model_accepts(claude_backend: OfflineBackend, item: UserContent):
    model = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0)
    claude_backend.set_brain("seen")

    try:
        result = await Agent(model).run(["What is this?", item])
    except UnsupportedContentError:
        accepted = False
    else:
        accepted = result.output == "seen"

    assert claimed(model, item) == accepted
