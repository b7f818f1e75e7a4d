"""Each CLI process keeps its temp files in a private folder, removed when it stops; a dead owner's folders (and
its stdio sessions' IPC folders) are removed when a later session starts."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model._process import temp as _cli_temp
from tests._support.processes import cli_children, environ

if TYPE_CHECKING:
    from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def present(path: Path) -> bool:
    return path.exists()


def entries() -> set[str]:
    return set(os.listdir(tempfile.gettempdir()))


async def test_the_cli_s_temp_files_live_in_a_private_folder_removed_with_the_process(claude_backend: OfflineBackend):
    env = claude_backend.cli_env()
    del env["CLAUDE_CODE_TMPDIR"]  # the user chose none
    before = entries()
    model = ClaudeCodeModel(env=env, spare_sessions=0)
    agent = Agent(model)

    @agent.tool_plain
    def look() -> str:
        return "seen"

    try:
        await agent.run("hello")
        [cli] = cli_children()
        private = Path(environ(cli)["CLAUDE_CODE_TMPDIR"])
        assert private.parent == Path(tempfile.gettempdir())
        assert private.name.startswith(f"claudecode_cli_{os.getpid()}_")
        assert present(private / "cc-socks")  # the CLI's litter is in there, not in the temp dir
        assert not {"cc-socks", f"claude-{os.getuid()}"} & entries()
    finally:
        await model.aclose()
    assert not present(private)
    assert entries() == before


async def test_the_folders_of_dead_owners_are_removed_when_a_session_starts(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
):
    base = Path(tempfile.gettempdir())
    owner = dead_pid()
    cli_leftover = base / f"claudecode_cli_{owner}_abcdefgh"
    os.makedirs(cli_leftover / "cc-socks")
    ipc_leftover = base / f"claudecode_ipc_{owner}_abcdefgh"
    os.mkdir(ipc_leftover)
    monkeypatch.setattr(_cli_temp, "_last_sweep", float("-inf"))
    # Also when the user chose the CLI's temp dir (as the test environment does) and the session uses no stdio.
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        await Agent(model).run("hello")
    finally:
        await model.aclose()
    assert not present(cli_leftover)
    assert not present(ipc_leftover)
