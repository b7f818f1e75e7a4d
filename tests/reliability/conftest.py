"""Fixtures of the reliability tests: a model on the offline backend, with a resource snapshot taken first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._tools.execution import ToolExecution
from tests._support.polling import wait_for
from tests._support.processes import cli_children, live_descendants
from tests._support.reliability import Resources, assert_nothing_leaked, brain

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from claudecode_model.testing import OfflineBackend


@dataclass
class Harness:
    """One model on one backend, and what existed before the test ran anything."""

    backend: OfflineBackend
    model: ClaudeCodeModel
    before: Resources

    def new_cli_processes(self) -> list[int]:
        """CLI processes started since the snapshot and still alive."""
        return [pid for pid in cli_children() if pid not in self.before.processes]

    async def wait_for_new_cli(self) -> int:
        """The single CLI process this test started (waits for it to appear)."""
        assert await wait_for(lambda: len(self.new_cli_processes()) == 1), self.new_cli_processes()
        [pid] = self.new_cli_processes()
        return pid

    async def assert_no_stray_processes(self, *, idle_sessions: int = 0) -> None:
        """No process is left but the ``idle_sessions`` CLIs kept for a next turn (and their IPC bridges)."""

        def unexpected() -> list[int]:
            clis = self.new_cli_processes()
            kept = set(clis).union(*(live_descendants(pid) for pid in clis))
            extra = live_descendants() - self.before.processes - kept
            return sorted(extra) if len(clis) == idle_sessions else [*clis, *extra]

        assert await wait_for(lambda: not unexpected()), f"processes left: {unexpected()}"

    async def assert_recovers(self, *, idle_sessions: int = 0) -> None:
        """The run left no process behind but the ``idle_sessions`` CLIs kept for a next turn (none after a
        failure); the same model instance then answers correctly; after ``aclose()`` nothing the test created
        is left (processes, temp entries, file descriptors)."""
        await self.assert_no_stray_processes(idle_sessions=idle_sessions)
        result = await Agent(self.model).run("are you still there?")
        assert result.output == "echo: are you still there?"
        await self.model.aclose()
        await assert_nothing_leaked(self.before)


@pytest.fixture
async def harness(request: pytest.FixtureRequest, claude_backend: OfflineBackend) -> AsyncIterator[Harness]:
    """A model on the backend whose tools run in Claude Code's loop, unless a test asks for ``"agent"`` (pydantic-ai
    runs them; a turn parks while they run) with ``parametrize("harness", ["agent"], indirect=True)``."""
    tool_execution: ToolExecution = getattr(request, "param", "cli")
    claude_backend.set_brain(FunctionModel(brain))
    # No spares: the tests count their CLIs exactly.
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_execution=tool_execution, spare_sessions=0)
    harness = Harness(claude_backend, model, Resources.now())
    try:
        yield harness
    finally:
        await model.aclose()
