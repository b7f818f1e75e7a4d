"""How much of a tool result Claude Code shows Claude, and the cut of a longer one.

Claude Code shows one tool result inline up to :data:`CLI_INLINE_LIMIT` characters of text (when the tool's listing
asks for it); above that it saves the result to a file and shows Claude a short preview. The library cuts such a text
itself (:func:`cap_text`), wherever a tool result reaches the CLI (a live turn, a replayed transcript), with a marker
naming the call's ``tool_use`` id and the tools that read the rest (served by ``_tools/result_reader.py``).
"""

from __future__ import annotations

__all__ = [
    "CLI_INLINE_LIMIT",
    "READ_RESULT_TOOL",
    "RESULT_READER_SERVER",
    "SEARCH_RESULT_TOOL",
    "TEXT_LIMIT",
    "cap_text",
]

CLI_INLINE_LIMIT = 500_000
"""Claude Code shows Claude a tool result inline up to this many characters of text (the most a tool's listing can
ask for: the CLI's default is 50,000); a longer one is saved to a file."""

TEXT_LIMIT = 495_000
"""The text of one tool result is cut to this many characters (marker included), safely below the inline limit."""

RESULT_READER_SERVER = "claudecode_results"
"""The MCP server of the tools that read the whole text of a cut tool result (it lists them once there is one)."""

READ_RESULT_TOOL = f"mcp__{RESULT_READER_SERVER}__read_tool_result"
"""Claude Code's name of the tool that reads a cut result by character offset."""

SEARCH_RESULT_TOOL = f"mcp__{RESULT_READER_SERVER}__search_tool_result"
"""Claude Code's name of the tool that searches a cut result."""


def cap_text(text: str, limit: int = TEXT_LIMIT, *, tool_use_id: str | None = None) -> str:
    """``text`` unchanged if it fits ``limit`` characters, else its start and a marker, ``limit`` in all.

    With ``tool_use_id`` the marker tells Claude how to read the rest (:data:`READ_RESULT_TOOL` and
    :data:`SEARCH_RESULT_TOOL` for that call's result).
    """
    if len(text) <= limit:
        return text

    def marker(shown: int) -> str:
        note = (
            f"\n[tool result cut: showing the first {shown:,} of {len(text):,} characters; "
            f"Claude Code shows at most {CLI_INLINE_LIMIT:,} characters of a tool result"
        )
        if tool_use_id is not None:
            note += (
                f". Read the rest with {READ_RESULT_TOOL}(tool_use_id={tool_use_id!r}, offset={shown}) "
                f"or search all of it with {SEARCH_RESULT_TOOL}"
            )
        return note + "]"

    shown = max(limit - len(marker(limit)), 0)
    return text[:shown] + marker(shown)
