"""``ClaudeCodePlugin``: the library passed through Temporal's workflow sandbox, other runners left alone."""

from __future__ import annotations

from temporalio.worker import UnsandboxedWorkflowRunner, WorkerConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from claudecode_model import ClaudeCodePlugin


def test_the_sandbox_takes_claude_code_modules_from_the_worker():
    config = ClaudeCodePlugin().configure_worker(WorkerConfig(workflow_runner=SandboxedWorkflowRunner()))

    runner = config["workflow_runner"]
    assert isinstance(runner, SandboxedWorkflowRunner)
    assert {"claudecode_model", "claude_agent_sdk"} <= set(runner.restrictions.passthrough_modules)
    default = SandboxedWorkflowRunner().restrictions.passthrough_modules
    assert set(runner.restrictions.passthrough_modules) - {"claudecode_model", "claude_agent_sdk"} == set(default)


def test_an_unsandboxed_runner_is_left_as_it_is():
    unsandboxed = UnsandboxedWorkflowRunner()
    config = ClaudeCodePlugin().configure_worker(WorkerConfig(workflow_runner=unsandboxed))

    assert config["workflow_runner"] is unsandboxed
