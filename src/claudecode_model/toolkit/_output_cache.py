"""The tool output cache: its two standard tools, history trimming, and the capability that adds it all."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import Field
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from claudecode_model.toolkit._results import (
    TOOL_OUTPUT_REF_KEY,
    UNTRUNCATED_METADATA_KEY,
    OutputCacheSettings,
    ToolResultsToolset,
)
from claudecode_model.toolkit._stores import MemoryToolOutputStore, ToolOutputStore, new_ref_id
from claudecode_model.toolkit._text import (
    DEFAULT_MAX_OUTPUT_BYTES,
    grep_output,
    read_output,
    trimmed_marker,
    truncated_ref,
    utf8_size,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_ai import RunContext
    from pydantic_ai.models import ModelRequestContext

__all__ = [
    "TOOL_OUTPUT_CACHE_GREP_NAME",
    "TOOL_OUTPUT_CACHE_NAME",
    "ToolOutputCache",
    "ToolOutputCacheToolset",
    "auto_trim_budget",
    "output_cache_toolset",
    "trim_tool_outputs",
]

logger = logging.getLogger(__name__)

TOOL_OUTPUT_CACHE_NAME = "tool_output_cache"
TOOL_OUTPUT_CACHE_GREP_NAME = "tool_output_cache_grep"

_TRIMMED_RE = re.compile(r"\[tool output trimmed; ref=[^\]\s]+\]")
_AUTO_MIN_TOKENS, _AUTO_MAX_TOKENS, _AUTO_UNKNOWN_WINDOW_TOKENS = 20_000, 100_000, 50_000


class ToolOutputCacheToolset(FunctionToolset[Any]):
    """The standard tools ``tool_output_cache`` and ``tool_output_cache_grep`` over ``store``.

    Their own output is never saved or truncated. An unknown ref id or an invalid regex is a failed tool
    result (pydantic-ai ``ToolFailed``: the model sees the error and can adapt; the retry budget is not used).

    Example:
        ```python
        store = MemoryToolOutputStore()
        agent = Agent(model, toolsets=[ToolResultsToolset(my_tools, cache=OutputCacheSettings(store)),
                                       output_cache_toolset(store)])
        ```
    """

    def __init__(self, store: ToolOutputStore, *, id: str | None = None) -> None:
        super().__init__(metadata={UNTRUNCATED_METADATA_KEY: True}, id=id)
        self.store = store

        async def tool_output_cache(
            ref_id: str,
            offset: Annotated[int, Field(ge=0)] = 0,
            limit: Annotated[int, Field(ge=1)] | None = None,
        ) -> str:
            """Read a saved tool output, with line numbers.

            Outputs that were too long end with `[tool output truncated; ref=<ref_id>]`, and old outputs may
            have been replaced by `[tool output trimmed; ref=<ref_id>]`: pass that ref id here.

            Args:
                ref_id: The ref id from the marker, e.g. `out_01jd6x4m0c9v7k2q8s3t5w6y7z`.
                offset: How many lines to skip (0-based: offset=100 starts at line 101).
                limit: How many lines to return at most (all remaining lines when omitted).
            """
            return read_output(await self._load(ref_id), offset=offset, limit=limit)

        async def tool_output_cache_grep(
            ref_id: str,
            pattern: Annotated[str, Field(min_length=1)],
            regex: bool = False,
            before: Annotated[int, Field(ge=0)] = 0,
            after: Annotated[int, Field(ge=0)] = 0,
            max_matches: Annotated[int, Field(ge=1)] = 50,
        ) -> str:
            """Search a saved tool output line by line; answers numbered lines (`    7: ` marks a match).

            Args:
                ref_id: The ref id from a `[tool output truncated; ref=...]` or
                    `[tool output trimmed; ref=...]` marker.
                pattern: Text to find: literal and case-sensitive unless `regex` is true.
                regex: Treat `pattern` as a Python regular expression (searched in each line).
                before: Lines of context to show before each match.
                after: Lines of context to show after each match.
                max_matches: Stop after this many matches.
            """
            text = await self._load(ref_id)
            try:
                return grep_output(text, pattern, regex=regex, before=before, after=after, max_matches=max_matches)
            except re.error as error:
                raise ToolFailed(f"Invalid regex {pattern!r}: {error}") from error

        self.add_function(tool_output_cache, name=TOOL_OUTPUT_CACHE_NAME)
        self.add_function(tool_output_cache_grep, name=TOOL_OUTPUT_CACHE_GREP_NAME)

    async def _load(self, ref_id: str) -> str:
        text = await self.store.load(ref_id)
        if text is None:
            raise ToolFailed(
                f"Unknown ref_id: {ref_id!r}. Use the exact id from a "
                "'[tool output truncated; ref=...]' or '[tool output trimmed; ref=...]' marker."
            )
        return text


def output_cache_toolset(store: ToolOutputStore) -> ToolOutputCacheToolset:
    """The ``tool_output_cache`` and ``tool_output_cache_grep`` tools over ``store``.

    Only the reading tools: outputs get into ``store`` through a :class:`ToolResultsToolset` with
    ``cache=OutputCacheSettings(store)``, or use the :class:`ToolOutputCache` capability, which does both.
    """
    return ToolOutputCacheToolset(store)


def _part_size(part: ToolReturnPart[Any]) -> int:
    return utf8_size(part.model_response_str(wrap_if_error=False))


def _is_trimmed(part: ToolReturnPart[Any]) -> bool:
    return isinstance(part.content, str) and _TRIMMED_RE.fullmatch(part.content) is not None


async def _ref_for(part: ToolReturnPart[Any], store: ToolOutputStore) -> tuple[str, Any]:
    """The ref holding the full output of ``part`` (saving it now if none does), and the metadata to keep."""
    metadata = part.metadata
    if isinstance(metadata, dict) and isinstance(ref := metadata.get(TOOL_OUTPUT_REF_KEY), str):
        return ref, metadata
    if isinstance(part.content, str) and (ref := truncated_ref(part.content)) is not None:
        return ref, metadata
    ref = new_ref_id()
    await store.save(ref, part.model_response_str(wrap_if_error=False))
    if metadata is None:
        metadata = {TOOL_OUTPUT_REF_KEY: ref}
    elif isinstance(metadata, dict):
        metadata = {**metadata, TOOL_OUTPUT_REF_KEY: ref}
    return ref, metadata


async def trim_tool_outputs(
    messages: Sequence[ModelMessage], *, budget_tokens: int, store: ToolOutputStore
) -> list[ModelMessage]:
    """Replace the oldest tool outputs by ``[tool output trimmed; ref=<id>]`` until all fit ``budget_tokens``.

    Tokens are estimated as UTF-8 bytes / 4 of the successful ``ToolReturnPart`` contents (files not counted).
    A trimmed output keeps its ref: the one its cached result recorded in ``metadata["tool_output_ref"]`` or
    named in its truncation marker; otherwise its text is saved to ``store`` under a fresh ref first.
    Returns a new list; messages and parts are replaced, never changed in place.
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, got {budget_tokens}")
    budget_bytes = budget_tokens * 4
    outputs: list[tuple[int, int, ToolReturnPart[Any], int]] = []
    total = 0
    for message_index, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        for part_index, part in enumerate(message.parts):
            # Only plain tool returns: typed ones (tool search, capability loads) are run state, not output.
            if type(part) is ToolReturnPart and part.outcome == "success":
                size = _part_size(part)
                outputs.append((message_index, part_index, part, size))
                total += size
    result = list(messages)
    if total <= budget_bytes:
        return result
    new_parts: dict[int, list[ModelRequestPart]] = {}
    for message_index, part_index, part, size in outputs:
        if total <= budget_bytes:
            break
        if _is_trimmed(part):
            continue
        ref, metadata = await _ref_for(part, store)
        marker = trimmed_marker(ref)
        parts = new_parts.setdefault(message_index, list(cast("ModelRequest", messages[message_index]).parts))
        parts[part_index] = dataclasses.replace(cast("ToolReturnPart[Any]", part), content=marker, metadata=metadata)
        total += utf8_size(marker) - size
        logger.debug("trimmed tool output %s of %r (%d bytes)", ref, part.tool_name, size)
    for message_index, parts in new_parts.items():
        result[message_index] = dataclasses.replace(cast("ModelRequest", messages[message_index]), parts=parts)
    return result


def auto_trim_budget(context_window: int | None) -> int:
    """A quarter of the context window clamped to 20k-100k tokens (50k when the window is unknown)."""
    if context_window is None or context_window <= 0:
        return _AUTO_UNKNOWN_WINDOW_TOKENS
    return max(_AUTO_MIN_TOKENS, min(_AUTO_MAX_TOKENS, context_window // 4))


@dataclass
class ToolOutputCache(AbstractCapability[AgentDepsT]):
    """The tool output cache in one line: saves every tool output, truncates what the model sees, adds tools.

    - every tool output of the agent is saved in ``store`` under a fresh ref id and reaches the model cut to
      ``max_output_bytes`` (whole lines) ending with ``[tool output truncated; ref=<id>]``; results follow the
      :class:`ToolResultsToolset` rules (result kinds, exceptions as ``Error executing tool: ...``);
    - the tools ``tool_output_cache`` (numbered lines) and ``tool_output_cache_grep`` read saved outputs;
    - with ``trim_to_tokens`` (off by default, as trimming changes old messages and defeats prompt caching),
      before each model request the oldest tool outputs in the history are replaced by
      ``[tool output trimmed; ref=<id>]`` until all fit: an int is a token budget (bytes / 4), ``"auto"`` a
      quarter of the model's context window clamped to 20k-100k tokens.

    The store lives as long as the capability, so refs stay valid across the runs of an agent.

    Example:
        ```python
        agent = Agent(model, capabilities=[ToolOutputCache()])
        cache = ToolOutputCache(DirectoryToolOutputStore("outputs"), trim_to_tokens="auto")
        agent = Agent(model, capabilities=[cache])
        ```
    """

    store: ToolOutputStore = field(default_factory=MemoryToolOutputStore)
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    trim_to_tokens: int | Literal["auto"] | None = None
    _settings: OutputCacheSettings = field(init=False, repr=False)
    _toolset: ToolOutputCacheToolset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.trim_to_tokens, int) and self.trim_to_tokens < 0:
            raise ValueError(f"trim_to_tokens must be >= 0, 'auto' or None, got {self.trim_to_tokens}")
        self._settings = OutputCacheSettings(self.store, self.max_output_bytes)
        self._toolset = ToolOutputCacheToolset(self.store)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a store object

    def get_toolset(self) -> AbstractToolset[AgentDepsT] | None:
        return self._toolset

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT] | None:
        return ToolResultsToolset(toolset, cache=self._settings)

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if self.trim_to_tokens is None:
            return request_context
        budget = (
            auto_trim_budget(request_context.model.context_window)
            if self.trim_to_tokens == "auto"
            else self.trim_to_tokens
        )
        history = ctx.messages
        trimmed = await trim_tool_outputs(history, budget_tokens=budget, store=self.store)
        replaced = {id(old): new for old, new in zip(history, trimmed, strict=True) if old is not new}
        if not replaced:
            return request_context
        history[:] = trimmed
        request_context.messages = [replaced.get(id(message), message) for message in request_context.messages]
        return request_context
