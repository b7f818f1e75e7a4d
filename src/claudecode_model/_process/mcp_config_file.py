"""The configs of the MCP servers the CLI reaches itself, kept off its command line: a private file the CLI reads.

The SDK writes ``ClaudeAgentOptions.mcp_servers`` as JSON into ``--mcp-config``, and every local user can read a
process's command line (``/proc/<pid>/cmdline``): an ``MCPServerTool``'s authorization token and headers, or a
stdio server's environment, would be there. The servers the CLI connects to or starts itself (``http``, ``sse``,
``stdio``) go instead into ``mcp.json`` (mode 0600) in a folder of their own (0700, named
``claudecode_mcp_<owner pid>_<random>`` in the temp dir), passed as a second ``--mcp-config`` (the CLI merges the
values). In-process servers (``"sdk"``) stay in the options: the SDK serves them over the control protocol, and
their config on the command line holds only a name. The folder is removed once the CLI process is gone; the folders
of owners that died without removing them are swept with the CLI temp folders (:mod:`claudecode_model._process.temp`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from claudecode_model.ipc._leftovers import directory_prefix

if TYPE_CHECKING:  # the SDK's types only: its import (a second) waits for the first request
    from claude_agent_sdk import ClaudeAgentOptions

__all__ = ["MCP_CONFIG_FLAG", "MCP_CONFIG_PREFIX", "with_private_mcp_config", "write_private_mcp_config"]

logger = logging.getLogger(__name__)

MCP_CONFIG_PREFIX = "claudecode_mcp_"
"""Prefix of the folder holding a CLI process's MCP config file."""

MCP_CONFIG_FLAG = "mcp-config"
"""The CLI's flag (in ``extra_args``) naming the file."""

_CONFIG_NAME = "mcp.json"


def _nothing() -> None:
    return None


def with_private_mcp_config(options: ClaudeAgentOptions) -> tuple[ClaudeAgentOptions, Callable[[], None]]:
    """``options`` whose external MCP servers the CLI reads from a private file, and what removes the file's
    folder (call it once the CLI process is gone). Options without such servers are returned as they are."""
    servers = options.mcp_servers
    if not isinstance(servers, Mapping):
        return options, _nothing  # a path (or JSON text) of the user's: the SDK passes it as it is
    external = {name: config for name, config in servers.items() if not _in_process(config)}
    if not external:
        return options, _nothing
    if MCP_CONFIG_FLAG in options.extra_args:
        logger.warning(
            "claude_code_extra_args sets --%s itself: the MCP servers %s stay in the CLI's command line",
            MCP_CONFIG_FLAG,
            sorted(external),
        )
        return options, _nothing
    path, remove = write_private_mcp_config(external)
    kept = {name: config for name, config in servers.items() if name not in external}
    extra_args = {**options.extra_args, MCP_CONFIG_FLAG: path}
    return replace(options, mcp_servers=kept, extra_args=extra_args), remove


def write_private_mcp_config(servers: Mapping[str, Any]) -> tuple[str, Callable[[], None]]:
    """Write ``servers`` as an MCP config file (0600, in a new 0700 folder); its path and what removes the folder."""
    folder = tempfile.mkdtemp(prefix=directory_prefix(MCP_CONFIG_PREFIX))  # owner-only (0700)

    def remove() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    path = os.path.join(folder, _CONFIG_NAME)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)  # none on Windows
        descriptor = os.open(path, flags, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump({"mcpServers": dict(servers)}, file)
    except BaseException:
        remove()
        raise
    logger.debug("MCP servers %s passed in %s", sorted(servers), path)
    return path, remove


def _in_process(config: object) -> bool:
    return isinstance(config, Mapping) and config.get("type") == "sdk"
