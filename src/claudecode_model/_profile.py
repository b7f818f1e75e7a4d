"""The default model profile of ``ClaudeCodeModel``: pydantic-ai's Anthropic profile with what the CLI accepts."""

from __future__ import annotations

from pydantic_ai.profiles import ModelProfile
from pydantic_ai.profiles.anthropic import anthropic_model_profile

__all__ = ["default_profile"]


def default_profile(model_name: str | None) -> ModelProfile:
    base = anthropic_model_profile(model_name or "claude-sonnet-4-5") or ModelProfile()
    return {
        **base,
        "supports_json_schema_output": True,
        "default_structured_output_mode": "native",
        # What the CLI's input accepts (see _to_anthropic): images, PDF and plain text; no audio, video or Office files.
        "supports_audio_file_input": False,
        "supports_video_input": False,
        "supported_document_media_types": frozenset({"application/pdf", "text/plain"}),
        # The unified cache setting: off (DISABLE_PROMPT_CACHING), or a TTL (CLAUDE_CODE_PROMPT_CACHE_TTL).
        "supports_cache": True,
        "supported_cache_retentions": ("5m", "1h"),
        # Claude Code sends no tool_choice: an explicit forcing choice is refused, an output tool's falls back.
        "supports_forced_tool_choice": False,
    }
