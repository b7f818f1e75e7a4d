"""Tool result kinds, how they reach the model, and the wrapper that applies the rule to every tool."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    RunCancelled,
    SkipToolExecution,
    SkipToolValidation,
    ToolFailed,
    ToolFailedError,
    ToolRetryError,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    MultiModalContent,
    ToolReturn,
    is_multi_modal_content,
)
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_core import to_jsonable_python

from claudecode_model.toolkit._stores import ToolOutputStore, new_ref_id
from claudecode_model.toolkit._text import DEFAULT_MAX_OUTPUT_BYTES, truncate_tool_output, utf8_size

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = [
    "TOOL_OUTPUT_REF_KEY",
    "UNTRUNCATED_METADATA_KEY",
    "JsonResult",
    "OutputCacheSettings",
    "PartsResult",
    "TextResult",
    "ToolContent",
    "ToolResult",
    "ToolResults",
    "ToolResultsToolset",
    "content_text",
    "error_message",
    "stable_json",
    "to_tool_content",
]

logger = logging.getLogger(__name__)

TOOL_OUTPUT_REF_KEY = "tool_output_ref"
"""Key of the ref id in the ``metadata`` of a cached tool output (``ToolReturn`` / ``ToolReturnPart``)."""

UNTRUNCATED_METADATA_KEY = "claudecode_model.untruncated"
"""Set this key to ``True`` in a tool's ``ToolDefinition.metadata`` to keep its output out of the output cache
(never saved, never truncated); the cache tools themselves carry it."""

ToolContent: TypeAlias = str | list[str | MultiModalContent]
"""What a tool result becomes for the model: text, or a list of text and multimodal parts."""

ImagePart: TypeAlias = ImageUrl | BinaryContent


@dataclass(frozen=True, slots=True)
class TextResult:
    """A text result: the model sees ``text`` as is."""

    text: str


@dataclass(frozen=True, slots=True)
class JsonResult:
    """A JSON result: the model sees ``value`` serialised stably (sorted keys, compact, UTF-8 kept).

    ``value`` may hold anything pydantic can turn into JSON (models, dataclasses, datetimes, ...).
    """

    value: object


@dataclass(frozen=True, slots=True)
class PartsResult:
    """A result of text and images, sent to the model as content parts in this order.

    Example:
        ```python
        return PartsResult(["The chart:", BinaryContent(png_bytes, media_type="image/png")])
        ```
    """

    parts: Sequence[str | ImagePart]

    def __post_init__(self) -> None:
        for part in self.parts:
            if isinstance(part, str | ImageUrl):
                continue
            if isinstance(part, BinaryContent) and part.is_image:
                continue
            raise TypeError(
                f"PartsResult holds text (str) and images (ImageUrl, image BinaryContent), not {part!r:.80}"
            )


ToolResult: TypeAlias = TextResult | PartsResult | JsonResult
"""The result kinds of a tool: text, parts (text and images) or a JSON value."""


def stable_json(value: object) -> str:
    """``value`` as JSON: sorted keys, compact separators, non-ASCII kept; raises on NaN or infinity."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=to_jsonable_python,
    )


def to_tool_content(value: object) -> ToolContent:
    """What the model sees for a tool's return ``value``; the one rule for every tool path.

    - :class:`TextResult` and ``str``: the text;
    - :class:`JsonResult`: :func:`stable_json` of its value;
    - :class:`PartsResult`: its parts as a list;
    - a pydantic-ai ``ToolReturn``: the rule applied to its ``return_value``;
    - ``None``: ``""``;
    - a multimodal item (``ImageUrl``, ``BinaryContent``, ...): a one-item list;
    - a list or tuple holding multimodal items: a list where text and files stay and other items become JSON;
    - anything else: :func:`stable_json` of it (as for a :class:`JsonResult`).
    """
    match value:
        case TextResult(text=text):
            return text
        case JsonResult(value=inner):
            return stable_json(inner)
        case PartsResult(parts=parts):
            return list(parts)
        case str():
            return value
        case None:
            return ""
        case ToolReturn():
            return to_tool_content(value.return_value)
        case _ if is_multi_modal_content(value):
            return [value]
        case list() | tuple() if any(is_multi_modal_content(item) for item in value):
            return [
                item if isinstance(item, str) or is_multi_modal_content(item) else stable_json(item) for item in value
            ]
        case _:
            return stable_json(value)


def content_text(content: ToolContent) -> str:
    """The text of ``content``: the string itself, or the text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part for part in content if isinstance(part, str))


def error_message(error: BaseException) -> str:
    """The text the model sees when a tool raised ``error``: ``Error executing tool: <Type>: <message>``."""
    detail = str(error)
    kind = type(error).__name__
    return f"Error executing tool: {kind}: {detail}" if detail else f"Error executing tool: {kind}"


# Raised on purpose to steer the run (retry, fail, defer, skip) or developer errors: never converted.
_PASS_THROUGH: tuple[type[BaseException], ...] = (
    ModelRetry,
    ToolFailed,
    ToolRetryError,
    ToolFailedError,
    CallDeferred,
    ApprovalRequired,
    SkipToolExecution,
    SkipToolValidation,
    UserError,
)


@dataclass(frozen=True, slots=True)
class OutputCacheSettings:
    """Where tool outputs are saved and how much of each the model sees."""

    store: ToolOutputStore
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES

    def __post_init__(self) -> None:
        if self.max_output_bytes <= 0:
            raise ValueError(f"max_output_bytes must be positive, got {self.max_output_bytes}")


@dataclass
class ToolResultsToolset(WrapperToolset[AgentDepsT]):
    """Wraps a toolset so every tool result follows the result-kind rules.

    - the return value becomes :func:`to_tool_content` (``TextResult`` -> text, ``JsonResult`` -> stable
      JSON, ``PartsResult`` -> content parts, ...); a returned ``ToolReturn`` keeps its content and metadata;
    - an exception becomes a failed tool result (pydantic-ai ``ToolFailed``, sent with the provider's error
      flag) reading ``Error executing tool: <Type>: <message>``. ``ModelRetry``, ``ToolFailed``, deferrals,
      pydantic-ai ``UserError`` and run-ending errors (cancellation, usage limits) pass through unchanged;
    - with ``cache``, every output is saved under a fresh ref id (``metadata["tool_output_ref"]``) and the
      model sees at most ``cache.max_output_bytes`` of it (whole lines), ending with
      ``[tool output truncated; ref=<id>]``. Tools whose definition metadata sets
      :data:`UNTRUNCATED_METADATA_KEY` are left out.

    Usually added through the :class:`ToolResults` or ``ToolOutputCache`` capability, which wrap all tools of
    an agent; wrap a single toolset directly with ``ToolResultsToolset(my_toolset)``.
    """

    cache: OutputCacheSettings | None = None

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        try:
            result = await self.wrapped.call_tool(name, tool_args, ctx, tool)
            content = to_tool_content(result)
        except _PASS_THROUGH:
            raise
        except AgentRunError as error:
            if _ends_the_run(error):
                raise
            logger.info("tool %r failed", name, exc_info=True)
            raise ToolFailed(error_message(error)) from error
        except Exception as error:
            logger.info("tool %r failed", name, exc_info=True)
            raise ToolFailed(error_message(error)) from error
        metadata = result.metadata if isinstance(result, ToolReturn) else None
        cache = self.cache
        if cache is not None and not (tool.tool_def.metadata or {}).get(UNTRUNCATED_METADATA_KEY):
            ref_id = new_ref_id()
            await cache.store.save(ref_id, content_text(content))
            content = _truncate_content(content, ref_id, cache.max_output_bytes)
            metadata = _with_ref(metadata, ref_id)
        if isinstance(result, ToolReturn):
            return dataclasses.replace(result, return_value=content, metadata=metadata)
        if metadata is not None:
            return ToolReturn(return_value=content, metadata=metadata)
        return content


def _ends_the_run(error: AgentRunError) -> bool:
    """Cancellation and usage limits of a nested run end this run too; other run errors are tool failures."""
    return isinstance(error, RunCancelled | UsageLimitExceeded)


def _with_ref(metadata: object, ref_id: str) -> object:
    if metadata is None:
        return {TOOL_OUTPUT_REF_KEY: ref_id}
    if isinstance(metadata, dict):
        return {**metadata, TOOL_OUTPUT_REF_KEY: ref_id}
    return metadata  # the tool's own metadata wins; trimming finds the ref another way


def _truncate_content(content: ToolContent, ref_id: str, max_bytes: int) -> ToolContent:
    if isinstance(content, str):
        return truncate_tool_output(content, ref_id, max_bytes)
    text = content_text(content)
    if utf8_size(text) <= max_bytes:
        return content
    files = [part for part in content if not isinstance(part, str)]
    return [truncate_tool_output(text, ref_id, max_bytes), *files]


@dataclass
class ToolResults(AbstractCapability[AgentDepsT]):
    """Applies the tool result rules (:class:`ToolResultsToolset`) to every tool of the agent.

    Example:
        ```python
        agent = Agent(model, capabilities=[ToolResults()])

        @agent.tool_plain
        def lookup(key: str) -> JsonResult:
            return JsonResult({"key": key, "hits": 3})  # the model sees {"hits":3,"key":"..."}
        ```
    """

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT] | None:
        return ToolResultsToolset(toolset)
