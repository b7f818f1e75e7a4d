"""Reading a tool result Claude Code could not show whole: the text kept per session, and two tools offered on demand.

Claude Code shows Claude at most 500,000 characters of one tool result, so a longer one is cut (its start and a
marker naming the call's ``tool_use`` id, :func:`~claudecode_model._history.cut_results.cap_text`). The whole text stays
in pydantic-ai's history, and a CLI session that serves the agent's tools also serves the MCP server
:data:`~claudecode_model._history.cut_results.RESULT_READER_SERVER`, in process, whose two tools read it:
``read_tool_result`` (a span by character offset, so that a one-line JSON result reads as well as a log) and
``search_tool_result`` (matches with their offsets and the text around them).

That server lists no tool until the session has a cut result: a request without one offers Claude exactly the
agent's tools. Once a result is cut, the session turns the server off and on (:meth:`ResultReader.announce`, through
the CLI's ``mcp_toggle`` control request) before the cut result is handed to the CLI; the CLI then lists the server's
tools again and offers them with its next API request of the same turn. That works from inside a tool call (both
execution modes) and whatever transport the agent's tools use; the SDK's in-process servers cannot announce a changed
tool list themselves.

The texts are kept in a :class:`~claudecode_model.toolkit.MemoryToolOutputStore` (the tool output cache's store)
under the ``tool_use`` id, for as long as the session lives; a request fills it again from its history
(:meth:`ResultReader.keep_history`), so a session resumed or forked from a transcript holding a cut result reads it
too. Nothing is written to disk.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, NativeToolReturnPart, ToolReturnPart

from claudecode_model._history.cut_results import (
    READ_RESULT_TOOL,
    RESULT_READER_SERVER,
    SEARCH_RESULT_TOOL,
    TEXT_LIMIT,
    cap_text,
)
from claudecode_model._tools.call_results import result_text
from claudecode_model._tools.core import McpResponse, ToolSpec, text_result

if TYPE_CHECKING:
    from claude_agent_sdk import McpSdkServerConfig

    from claudecode_model.toolkit import MemoryToolOutputStore

__all__ = ["READ_LIMIT", "ResultReader"]

logger = logging.getLogger(__name__)

READ_LIMIT = 400_000
"""The most characters one ``read_tool_result`` call answers (below what Claude Code shows of a result)."""

_DEFAULT_READ = 100_000
_DEFAULT_CONTEXT = 200
_MAX_CONTEXT = 5_000


class ResultReader:
    """The whole text of one CLI session's cut tool results, and the MCP server whose tools read them."""

    def __init__(self) -> None:
        self._store: MemoryToolOutputStore | None = None
        self._kept: set[str] = set()
        self._listed = False
        self._announcing: asyncio.Lock | None = None
        self.served = False
        """Whether the session's CLI was given :meth:`server` (only then are texts kept and tools announced)."""
        self._relist: Callable[[str], Awaitable[None]] | None = None

    def attach(self, relist: Callable[[str], Awaitable[None]]) -> None:
        """How the session that owns this reader makes its CLI list a server's tools again."""
        self._relist = relist

    # --- keeping texts ------------------------------------------------------------------------------------------

    def _texts(self) -> MemoryToolOutputStore:
        if self._store is None:
            from claudecode_model.toolkit import MemoryToolOutputStore  # loaded with the first cut result

            self._store = MemoryToolOutputStore()
        return self._store

    async def keep(self, tool_use_id: str, text: str) -> None:
        """Keep the whole ``text`` of the cut result of call ``tool_use_id``."""
        if not self.served:
            return
        if tool_use_id in self._kept and await self._texts().load(tool_use_id) == text:
            return
        await self._texts().save(tool_use_id, text)
        self._kept.add(tool_use_id)
        logger.debug("kept the whole text of the cut result of %s (%d characters)", tool_use_id, len(text))

    async def keep_history(self, messages: Sequence[ModelMessage]) -> None:
        """Keep the text of every tool return of ``messages`` that Claude Code gets cut (pydantic-ai's history holds
        each whole: a ``ToolReturnPart``, or a ``NativeToolReturnPart`` of a tool run inside Claude Code's loop), so
        that the markers in any transcript of this conversation can be followed."""
        if not self.served:
            return
        for message in messages:
            if isinstance(message, ModelRequest):
                await self.keep_parts(message.parts)
                continue
            for part in message.parts:
                if isinstance(part, NativeToolReturnPart) and len(text := part.model_response_str()) > TEXT_LIMIT:
                    await self.keep(part.tool_call_id, text)

    async def keep_parts(self, parts: Sequence[ModelRequestPart]) -> None:
        """Keep the text of every tool return of ``parts`` that Claude Code gets cut."""
        if not self.served:
            return
        for part in parts:
            if not isinstance(part, ToolReturnPart):
                continue
            text = result_text(part)  # a string content is the text itself: no copy
            if len(text) > TEXT_LIMIT:
                await self.keep(part.tool_call_id, text)

    async def fit(self, response: McpResponse, tool_use_id: str | None) -> tuple[McpResponse, str | None]:
        """A tool's response as Claude Code can show it, and its whole text if it was cut: text above the limit is
        cut, with the whole kept and the reading tools announced first (``tool_use_id`` ``None``: cut without them)."""
        texts = [str(item["text"]) for item in response["content"] if item["type"] == "text"]
        if sum(len(text) for text in texts) <= TEXT_LIMIT:
            return response, None
        whole = "\n".join(texts)
        is_error = bool(response.get("isError", False))
        if tool_use_id is None or not self.served:
            return text_result(cap_text(whole), is_error=is_error), whole
        await self.keep(tool_use_id, whole)
        await self.announce()
        return text_result(cap_text(whole, tool_use_id=tool_use_id), is_error=is_error), whole

    @property
    def kept(self) -> frozenset[str]:
        """The ``tool_use`` ids of the results kept whole."""
        return frozenset(self._kept)

    def clear(self) -> None:
        """Forget every text (the session is gone)."""
        self._store = None
        self._kept.clear()

    # --- offering the tools -------------------------------------------------------------------------------------

    def _listing(self) -> bool:
        if self._kept:
            self._listed = True
        return bool(self._kept)

    async def announce(self) -> None:
        """Have the CLI offer the reading tools from its next API request on, if a result was cut and they are not
        offered yet (a failure is logged: Claude then gets the marker without the tools)."""
        if not self._kept or self._listed or self._relist is None:
            return
        if self._announcing is None:
            self._announcing = asyncio.Lock()
        async with self._announcing:
            if self._listed:
                return
            try:
                await self._relist(RESULT_READER_SERVER)
            except Exception as error:
                logger.warning("Claude Code could not be offered the tools that read a cut tool result: %s", error)
                return
            self._listed = True
            logger.debug("the tools reading cut tool results are offered to Claude")

    def server(self) -> McpSdkServerConfig:
        """The in-process MCP server of the reading tools (listing them once a result is cut)."""
        from claudecode_model._tools.inprocess_server import build_inprocess_server

        self.served = True
        return build_inprocess_server(RESULT_READER_SERVER, self.tools(), listed=self._listing)

    # --- the tools ----------------------------------------------------------------------------------------------

    async def _load(self, tool_use_id: object) -> str:
        text = await self._texts().load(tool_use_id) if isinstance(tool_use_id, str) else None
        if text is None:
            known = ", ".join(sorted(self._kept)) or "none"
            raise ValueError(
                f"No cut tool result has tool_use_id {tool_use_id!r} in this session (cut results: {known}). "
                "Use the id named in a '[tool result cut: ...]' marker."
            )
        return text

    async def _read(self, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        text = await self._load(arguments.get("tool_use_id"))
        start = int(arguments.get("offset", 0))
        end = min(start + int(arguments.get("length", _DEFAULT_READ)), len(text))
        if start >= len(text):
            return text_result(f"[offset {start:,} is past the end: the result has {len(text):,} characters]")
        after = f"continue with offset={end}" if end < len(text) else "the end of the result"
        return text_result(f"{text[start:end]}\n[characters {start:,} to {end:,} of {len(text):,}; {after}]")

    async def _search(self, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        text = await self._load(arguments.get("tool_use_id"))
        pattern = str(arguments["pattern"])
        context = int(arguments.get("context", _DEFAULT_CONTEXT))
        max_matches = int(arguments.get("max_matches", 20))
        try:
            compiled = re.compile(pattern if arguments.get("regex", False) else re.escape(pattern))
        except re.error as error:
            raise ValueError(f"Invalid regex {pattern!r}: {error}") from error
        found: list[str] = []
        for match in compiled.finditer(text):
            if len(found) == max_matches:
                found.append(f"[more matches from offset {match.start()} on: ask again with a larger max_matches]")
                break
            start, end = max(0, match.start() - context), min(len(text), match.end() + context)
            found.append(f"[match at offset {match.start()}; text from offset {start}]\n{text[start:end]}")
        if not found:
            return text_result(f"No matches for: {pattern}")
        return text_result(cap_text("\n\n".join(found), READ_LIMIT))

    def tools(self) -> list[ToolSpec]:
        """The reading tools: ``read_tool_result`` and ``search_tool_result``."""
        tool_use_id = {"type": "string", "description": "The tool_use id named in the '[tool result cut: ...]' marker."}
        read = ToolSpec(
            name=READ_RESULT_TOOL.rpartition("__")[2],
            description=(
                "Read a tool result that was too long to show whole: the characters from `offset` on (`length` of "
                "them, at most 400,000). A cut result ends with a '[tool result cut: ...]' marker naming its "
                "tool_use_id and the offset where it was cut."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "tool_use_id": tool_use_id,
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "default": 0,
                        "description": "The first character to read (0-based).",
                    },
                    "length": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": READ_LIMIT,
                        "default": _DEFAULT_READ,
                        "description": "How many characters to read.",
                    },
                },
                "required": ["tool_use_id"],
            },
            handler=self._read,
            read_only=True,
            check_arguments=True,
        )
        search = ToolSpec(
            name=SEARCH_RESULT_TOOL.rpartition("__")[2],
            description=(
                "Search all of a tool result that was too long to show whole: each match's character offset and the "
                "text around it (read more there with read_tool_result)."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "tool_use_id": tool_use_id,
                    "pattern": {"type": "string", "minLength": 1, "description": "Text to find (case-sensitive)."},
                    "regex": {"type": "boolean", "default": False, "description": "Treat pattern as a Python regex."},
                    "context": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": _MAX_CONTEXT,
                        "default": _DEFAULT_CONTEXT,
                        "description": "Characters shown before and after each match.",
                    },
                    "max_matches": {"type": "integer", "minimum": 1, "maximum": 500, "default": 20},
                },
                "required": ["tool_use_id", "pattern"],
            },
            handler=self._search,
            read_only=True,
            check_arguments=True,
        )
        return [read, search]
