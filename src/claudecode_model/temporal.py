"""Durable agents on Temporal: the worker and client plugin that lets Claude Code agents run in workflows.

pydantic-ai's Temporal integration (``pydantic_ai.durable_exec.temporal``: the ``TemporalDurability`` capability,
its ``PydanticAIPlugin`` and ``AgentPlugin``) makes each model request and each tool call an activity. Workflow code
runs in Temporal's sandbox, which imports every module again for each workflow unless it is passed through; this
plugin passes claudecode-model and claude-agent-sdk through, as pydantic-ai's plugin does for its own modules and
the model SDKs it knows. The workflow side of a run then uses the worker's own modules (no import of the library per
workflow, no late-import warning when a request prepares its tools), while the requests themselves, and every CLI
process, stay in activities.

Example:
    ```python
    from temporalio.client import Client
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    from claudecode_model.temporal import ClaudeCodePlugin

    async def connect() -> Client:
        return await Client.connect("localhost:7233", plugins=[PydanticAIPlugin(), ClaudeCodePlugin()])
    ```
"""

from __future__ import annotations

import dataclasses
import logging

try:
    from temporalio.plugin import SimplePlugin
    from temporalio.worker import WorkflowRunner
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError("ClaudeCodePlugin needs the Temporal SDK: pip install 'claudecode-model[temporal]'") from error

__all__ = ["PASSTHROUGH_MODULES", "ClaudeCodePlugin"]

logger = logging.getLogger(__name__)

PASSTHROUGH_MODULES = ("claudecode_model", "claude_agent_sdk")
"""The modules workflow code takes from the worker instead of importing them again in the sandbox."""


def _pass_modules_through(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        raise ValueError("ClaudeCodePlugin: the worker has no workflow runner to configure")
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner
    logger.debug("passing %s through Temporal's workflow sandbox", ", ".join(PASSTHROUGH_MODULES))
    return dataclasses.replace(runner, restrictions=runner.restrictions.with_passthrough_modules(*PASSTHROUGH_MODULES))


class ClaudeCodePlugin(SimplePlugin):
    """Temporal plugin for workers (and clients) that run agents on :class:`~claudecode_model.ClaudeCodeModel`.

    Use it next to pydantic-ai's ``PydanticAIPlugin``: ``plugins=[PydanticAIPlugin(), ClaudeCodePlugin()]``.
    """

    def __init__(self) -> None:
        super().__init__(name="ClaudeCodePlugin", workflow_runner=_pass_modules_through)
