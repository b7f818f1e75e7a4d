"""A new CLI process that fails to start after its tool servers started leaves no IPC session behind (issue 39)."""

from __future__ import annotations

import os
import tempfile

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model._tools.request import serve_tool_servers
from claudecode_model._turns import acquire
from claudecode_model.ipc import IPCSessionState
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def ipc_entries() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("claudecode_ipc_")}


async def test_a_failure_after_the_tool_servers_started_stops_them(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
):
    started: list[object] = []
    real_serve = serve_tool_servers  # what acquire calls (imported from there)

    async def serve_and_note(*args: object, **kwargs: object) -> object:
        served = await real_serve(*args, **kwargs)  # type: ignore[arg-type]
        started.extend(served)
        return served

    def broken_prompt_file(options: object) -> object:
        raise RuntimeError("could not write the prompt file")

    monkeypatch.setattr(acquire, "serve_tool_servers", serve_and_note)
    monkeypatch.setattr(acquire, "with_prompt_file", broken_prompt_file)
    before = ipc_entries()
    model = ClaudeCodeModel(env=claude_backend.cli_env(), tool_transport="stdio", spare_sessions=0)
    agent = Agent(model)

    @agent.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    try:
        with pytest.raises(Exception, match="could not write the prompt file"):
            await agent.run("look it up")
    finally:
        await model.aclose()

    assert started  # the stdio server had started (an IPC session) before the failure
    sessions = [tools.ipc for tools in started if tools.ipc is not None]  # type: ignore[attr-defined]
    assert sessions
    assert all(session.state is IPCSessionState.STOPPED for session in sessions)
    assert ipc_entries() == before
    assert claude_backend.requests == []
