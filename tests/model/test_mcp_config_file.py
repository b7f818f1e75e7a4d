"""The MCP servers the CLI reaches itself go to a private file, not the command line (issue 35): which servers move,
the file's and folder's modes, their removal, and the sweep of a dead owner's folder."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import McpHttpServerConfig, McpSdkServerConfig, McpStdioServerConfig
from mcp.server import Server

from claudecode_model._process import temp as cli_temp
from claudecode_model._process.mcp_config_file import (
    MCP_CONFIG_FLAG,
    MCP_CONFIG_PREFIX,
    with_private_mcp_config,
    write_private_mcp_config,
)

HTTP: McpHttpServerConfig = {
    "type": "http",
    "url": "http://127.0.0.1:9/mcp",
    "headers": {"Authorization": "Bearer s3cret", "X-Key": "k3y"},
}
STDIO: McpStdioServerConfig = {"type": "stdio", "command": "python", "args": ["-m", "x"], "env": {"TOKEN": "t0ken"}}
SDK: McpSdkServerConfig = {"type": "sdk", "name": "pydantic_tools", "instance": Server("pydantic_tools")}


def folders() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(MCP_CONFIG_PREFIX)}


def test_external_servers_move_to_a_private_file_and_in_process_ones_stay():
    options = ClaudeAgentOptions(
        mcp_servers={"notes": HTTP, "bridge": STDIO, "pydantic_tools": SDK}, extra_args={"verbose": None}
    )

    moved, remove = with_private_mcp_config(options)
    try:
        assert moved.mcp_servers == {"pydantic_tools": SDK}
        assert moved.extra_args["verbose"] is None
        path = Path(moved.extra_args[MCP_CONFIG_FLAG] or "")
        assert json.loads(path.read_text()) == {"mcpServers": {"notes": HTTP, "bridge": STDIO}}
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.parent.parent == Path(tempfile.gettempdir())
        assert path.parent.name.startswith(f"{MCP_CONFIG_PREFIX}{os.getpid()}_")
        assert options.mcp_servers == {"notes": HTTP, "bridge": STDIO, "pydantic_tools": SDK}  # not changed
    finally:
        remove()
    assert not path.parent.exists()
    remove()  # twice is harmless


def test_the_file_is_private_whatever_the_umask():
    old = os.umask(0)
    try:
        path, remove = write_private_mcp_config({"notes": HTTP})
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    finally:
        remove()


@pytest.mark.parametrize(
    "servers",
    [{}, {"pydantic_tools": SDK}, "/some/servers.json"],
    ids=["none", "in-process only", "the user's path"],
)
def test_options_without_external_servers_are_left_alone(servers: Any):
    options = ClaudeAgentOptions(mcp_servers=servers)
    before = folders()

    same, remove = with_private_mcp_config(options)

    assert same is options
    assert folders() == before
    remove()


def test_an_mcp_config_of_the_user_s_own_keeps_the_servers_inline_and_says_so(caplog: pytest.LogCaptureFixture):
    options = ClaudeAgentOptions(mcp_servers={"notes": HTTP}, extra_args={MCP_CONFIG_FLAG: "/mine.json"})

    with caplog.at_level(logging.WARNING):
        same, _ = with_private_mcp_config(options)

    assert same is options
    assert "stay in the CLI's command line" in caplog.text


def test_a_config_that_cannot_be_written_leaves_no_folder():
    before = folders()

    with pytest.raises(TypeError):
        write_private_mcp_config({"notes": {"type": "http", "url": object()}})

    assert folders() == before


def test_a_dead_owner_s_folder_is_swept(monkeypatch: pytest.MonkeyPatch):
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    leftover = Path(tempfile.gettempdir()) / f"{MCP_CONFIG_PREFIX}{process.pid}_abcdefgh"
    leftover.mkdir(mode=0o700)
    (leftover / "mcp.json").write_text("{}")
    path, remove = write_private_mcp_config({"notes": HTTP})  # a live owner's (this process) stays
    monkeypatch.setattr(cli_temp, "_last_sweep", float("-inf"))
    try:
        cli_temp.sweep_dead_leftovers(tempfile.gettempdir())
        assert not leftover.exists()
        assert os.path.exists(path)
    finally:
        remove()
