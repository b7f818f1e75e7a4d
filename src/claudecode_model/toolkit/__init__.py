"""The tool runtime of seed 003 for pydantic-ai agents (any model, including ``ClaudeCodeModel``)."""

from claudecode_model.toolkit._stores import (
    DirectoryToolOutputStore,
    MemoryToolOutputStore,
    ToolOutputStore,
    is_ref_id,
    new_ref_id,
)
from claudecode_model.toolkit._text import (
    DEFAULT_MAX_OUTPUT_BYTES,
    grep_output,
    read_output,
    trimmed_marker,
    truncate_tool_output,
    truncated_marker,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DirectoryToolOutputStore",
    "MemoryToolOutputStore",
    "ToolOutputStore",
    "grep_output",
    "is_ref_id",
    "new_ref_id",
    "read_output",
    "trimmed_marker",
    "truncate_tool_output",
    "truncated_marker",
]
