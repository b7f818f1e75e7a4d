"""System prompts too long for the command line: written to a private file that the CLI reads at its start.

The SDK passes the system prompt as one argument (``--system-prompt``). Windows caps a whole command line at
32,767 characters (Linux caps one argument at 128 KiB), and that is the design limit on every platform: a prompt
above :data:`INLINE_SYSTEM_PROMPT_BYTES` goes through ``--system-prompt-file`` instead, the file living as long as
the CLI process does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # the SDK's types only: its import (a second) waits for the first request
    from claude_agent_sdk import ClaudeAgentOptions
    from claude_agent_sdk.types import SystemPromptCustom, SystemPromptFile

__all__ = ["INLINE_SYSTEM_PROMPT_BYTES", "PROMPT_FILE_PREFIX", "with_prompt_file"]

logger = logging.getLogger(__name__)

INLINE_SYSTEM_PROMPT_BYTES = 16 * 1024
"""The longest system prompt (UTF-8 bytes, so at most as many characters) passed on the command line: with the
longest output schema passed there (``INLINE_OUTPUT_SCHEMA_CHARACTERS``, 8,192) and the other arguments, the command
line stays within Windows' 32,767 characters."""

PROMPT_FILE_PREFIX = "claudecode_prompt_"


def _nothing() -> None:
    return None


def with_prompt_file(options: ClaudeAgentOptions) -> tuple[ClaudeAgentOptions, Callable[[], None]]:
    """``options`` whose system prompt the CLI reads from a file if it is too long for the command line, and what
    removes that file (call it once the CLI process is gone)."""
    prompt = options.system_prompt
    if not isinstance(prompt, dict) or prompt.get("type") != "custom":
        return options, _nothing
    text = cast("SystemPromptCustom", prompt)["prompt"]
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= INLINE_SYSTEM_PROMPT_BYTES:
        return options, _nothing
    descriptor, path = tempfile.mkstemp(prefix=PROMPT_FILE_PREFIX, suffix=".txt")  # owner-only (0600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    logger.debug("system prompt of %d bytes passed in %s", len(data), path)

    def remove() -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    # A file prompt has no snapshot field: the flag keeps it out of the transcript like the inline form's field.
    extra_args = {**options.extra_args, "system-prompt-snapshot": "off"}
    file_prompt: SystemPromptFile = {"type": "file", "path": path}
    return replace(options, system_prompt=file_prompt, extra_args=extra_args), remove
