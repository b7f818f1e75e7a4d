"""The tool runtime for pydantic-ai agents (any model, including ``ClaudeCodeModel``).

- dependency keys: :class:`DependencyKey`, :func:`resolve`, :func:`override`, the :class:`Dependencies`
  capability;
- tool result kinds: :class:`TextResult`, :class:`PartsResult`, :class:`JsonResult`, :func:`to_tool_content`,
  the :class:`ToolResults` capability and :class:`ToolResultsToolset` wrapper;
- the tool output cache: :class:`ToolOutputCache` capability, stores, the ``tool_output_cache`` and
  ``tool_output_cache_grep`` tools, history trimming;
- standard tools: :func:`done_output` and :func:`todo_toolset`.

Example:
    ```python
    from claudecode_model.toolkit import ToolOutputCache, done_output, todo_toolset

    agent = Agent(
        model,
        output_type=[str, done_output()],
        end_strategy="early",
        toolsets=[todo_toolset()],
        capabilities=[ToolOutputCache()],
    )
    ```
"""

from claudecode_model.toolkit._deps import (
    Dependencies,
    DependencyKey,
    DependencyResolutionError,
    DependencyScope,
    override,
    resolve,
)
from claudecode_model.toolkit._done import DONE_TOOL_NAME, done, done_output
from claudecode_model.toolkit._output_cache import (
    TOOL_OUTPUT_CACHE_GREP_NAME,
    TOOL_OUTPUT_CACHE_NAME,
    ToolOutputCache,
    ToolOutputCacheToolset,
    auto_trim_budget,
    output_cache_toolset,
    trim_tool_outputs,
)
from claudecode_model.toolkit._results import (
    TOOL_OUTPUT_REF_KEY,
    UNTRUNCATED_METADATA_KEY,
    JsonResult,
    OutputCacheSettings,
    PartsResult,
    TextResult,
    ToolContent,
    ToolResult,
    ToolResults,
    ToolResultsToolset,
    error_message,
    stable_json,
    to_tool_content,
)
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
from claudecode_model.toolkit._todos import (
    READ_TODOS_NAME,
    WRITE_TODOS_NAME,
    TodoItem,
    TodoList,
    TodoStatus,
    TodoToolset,
    todo_summary,
    todo_toolset,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DONE_TOOL_NAME",
    "READ_TODOS_NAME",
    "TOOL_OUTPUT_CACHE_GREP_NAME",
    "TOOL_OUTPUT_CACHE_NAME",
    "TOOL_OUTPUT_REF_KEY",
    "UNTRUNCATED_METADATA_KEY",
    "WRITE_TODOS_NAME",
    "Dependencies",
    "DependencyKey",
    "DependencyResolutionError",
    "DependencyScope",
    "DirectoryToolOutputStore",
    "JsonResult",
    "MemoryToolOutputStore",
    "OutputCacheSettings",
    "PartsResult",
    "TextResult",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "TodoToolset",
    "ToolContent",
    "ToolOutputCache",
    "ToolOutputCacheToolset",
    "ToolOutputStore",
    "ToolResult",
    "ToolResults",
    "ToolResultsToolset",
    "auto_trim_budget",
    "done",
    "done_output",
    "error_message",
    "grep_output",
    "is_ref_id",
    "new_ref_id",
    "output_cache_toolset",
    "override",
    "read_output",
    "resolve",
    "stable_json",
    "to_tool_content",
    "todo_summary",
    "todo_toolset",
    "trim_tool_outputs",
    "trimmed_marker",
    "truncate_tool_output",
    "truncated_marker",
]
