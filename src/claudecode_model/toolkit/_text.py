"""Pure text rules of the tool output cache: lines, numbering, truncation, reading and grep."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "grep_output",
    "number_line",
    "read_output",
    "split_lines",
    "trimmed_marker",
    "truncate_tool_output",
    "truncated_marker",
]

DEFAULT_MAX_OUTPUT_BYTES = 48_000
"""Default byte budget (UTF-8) of one tool output as the model sees it.

Below Claude Code's inline limit for tool results (50,000 characters; a longer result is saved to a file and Claude
only sees a short preview), so that the ``[tool output truncated; ref=...]`` marker after the kept text reaches Claude.
"""

_TRUNCATED_RE = re.compile(r"\[tool output truncated; ref=([^\]\s]+)\]\Z")


def utf8_size(text: str) -> int:
    """Size of ``text`` in UTF-8 bytes (lone surrogates, as in ``surrogateescape`` text, count 3 bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits ``max_bytes``, cut between characters."""
    data = text.encode("utf-8", "surrogatepass")[: max_bytes + 1]
    end = min(max_bytes, len(data))
    while 0 < end < len(data) and data[end] & 0xC0 == 0x80:  # a continuation byte: inside a character
        end -= 1
    return data[:end].decode("utf-8", "surrogatepass")


def truncated_marker(ref_id: str) -> str:
    """The line that ends a truncated tool output."""
    return f"[tool output truncated; ref={ref_id}]"


def trimmed_marker(ref_id: str) -> str:
    """What replaces a tool output trimmed from the history."""
    return f"[tool output trimmed; ref={ref_id}]"


def truncated_ref(text: str) -> str | None:
    """The ref named by the truncation marker ending ``text``, if it ends with one."""
    match = _TRUNCATED_RE.search(text)
    return None if match is None else match.group(1)


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only, dropping a trailing ``\\r`` from each line; a final newline ends a line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_line(number: int, line: str, *, match: bool = False) -> str:
    """``number`` right-aligned to width 5, then two spaces (``": "`` for a grep match), then the line."""
    return f"{number:>5}{':' if match else ' '} {line}"


def truncate_tool_output(text: str, ref_id: str, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> str:
    """What the model sees of ``text``: unchanged when it fits ``max_bytes`` (UTF-8), else the whole lines
    that fit followed by ``[tool output truncated; ref=<ref_id>]`` on its own line.

    When not even the first line fits, the longest prefix of it that fits (cut between characters) is kept, so
    the model still sees the start of the output.
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    if utf8_size(text) <= max_bytes:
        return text
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        size = utf8_size(line) + 1  # with its newline: the whole text is larger than the budget
        if used + size > max_bytes:
            break
        kept.append(line + "\n")
        used += size
    if not kept:
        kept.append(_utf8_prefix(text, max_bytes) + "\n")
    return "".join(kept) + truncated_marker(ref_id)


def read_output(text: str, *, offset: int = 0, limit: int | None = None) -> str:
    """Lines ``offset`` (0-based) to ``offset + limit`` of ``text``, numbered from 1 (:func:`number_line`)."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    lines = split_lines(text)
    end = None if limit is None else offset + limit
    selected = lines[offset:end]
    if not selected:
        return f"No lines at offset {offset} (the output has {len(lines)} lines)"
    return "\n".join(number_line(offset + index + 1, line) for index, line in enumerate(selected))


def grep_output(
    text: str,
    pattern: str,
    *,
    regex: bool = False,
    before: int = 0,
    after: int = 0,
    max_matches: int = 50,
) -> str:
    """Search the lines of ``text`` for ``pattern``.

    Literal and case-sensitive unless ``regex`` (Python :mod:`re` syntax, ``re.search`` per line;
    ``re.error`` is raised for an invalid pattern). Each match gets its own numbered block with
    ``before``/``after`` lines of context; blocks are never merged, so overlapping context repeats. Matching
    lines are numbered ``"    7: "``, context lines ``"    6  "``. Blocks are separated by a ``--`` line when
    there is context. At most ``max_matches`` blocks; ``... (truncated)`` follows when more matches exist,
    and ``No matches for: <pattern>`` is the whole answer when there are none.
    """
    if before < 0 or after < 0:
        raise ValueError("before and after must be >= 0")
    if max_matches < 1:
        raise ValueError(f"max_matches must be >= 1, got {max_matches}")
    matches: Callable[[str], bool]
    if regex:
        compiled = re.compile(pattern)

        def matches(line: str) -> bool:
            return compiled.search(line) is not None

    else:

        def matches(line: str) -> bool:
            return pattern in line

    lines = split_lines(text)
    blocks: list[str] = []
    truncated = False
    for index, line in enumerate(lines):
        if not matches(line):
            continue
        if len(blocks) == max_matches:
            truncated = True
            break
        start, end = max(0, index - before), min(len(lines), index + after + 1)
        blocks.append(
            "\n".join(number_line(i + 1, lines[i], match=i == index or matches(lines[i])) for i in range(start, end))
        )
    if not blocks:
        return f"No matches for: {pattern}"
    result = ("\n--\n" if before or after else "\n").join(blocks)
    return result + "\n... (truncated)" if truncated else result
