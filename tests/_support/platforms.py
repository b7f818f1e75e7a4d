"""Another platform's branches of the library, run on Linux: a fresh interpreter that sets ``sys.platform`` before it
imports the library, so that the platform layer (and every other ``sys.platform`` check) takes that platform's way
while the kernel underneath stays Linux.

The standard library and the third-party stack are imported first, with the real platform: some of their modules
branch on the platform at import (asyncio picks its event loop module, subprocess its way of spawning), and the ones
for another platform cannot load here. Only the library is imported under the simulated platform.
"""

from __future__ import annotations

import re
import subprocess
from typing import TYPE_CHECKING

from tests._support.subprocesses import run_python

if TYPE_CHECKING:
    from collections.abc import Mapping

PRELOADED = (
    "asyncio",
    "asyncio.subprocess",
    "asyncio.unix_events",
    "concurrent.futures",
    "ctypes",
    "ctypes.util",
    "email.utils",
    "getpass",
    "http.client",
    "importlib.metadata",
    "json",
    "logging.handlers",
    "mimetypes",
    "platform",
    "selectors",
    "shlex",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "tempfile",
    "urllib.request",
    "uuid",
    "zoneinfo",
    "anyio",
    "anyio._backends._asyncio",
    "httpx",
    "pydantic",
    "pydantic_ai",
    "pydantic_ai.agent",
    "pydantic_ai.models",
    "pydantic_ai.models.function",
    "claude_agent_sdk",
    "claude_agent_sdk._internal.transport.subprocess_cli",
    "mcp",
    "mcp.server.lowlevel",
    "uvicorn",
    "starlette.applications",
)
"""Imported with the real platform before the switch (what is not installed is left out)."""

PLATFORMS = ("darwin", "win32")


def prelude(platform: str) -> str:
    """The code that loads the stack, checks the library is not loaded yet, and switches ``sys.platform``."""
    return (
        "import importlib, sys\n"
        f"for name in {PRELOADED!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "assert not [m for m in sys.modules if m.startswith('claudecode_model')], 'the library was loaded already'\n"
        f"sys.platform = {platform!r}\n"
        "from claudecode_model._process import platform as _layer\n"
        f"assert _layer.NAME == {platform!r}, _layer.NAME\n"
    )


def run_as(
    platform: str, code: str, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (with ``args`` in ``sys.argv[1:]``) in a fresh interpreter whose ``sys.platform`` is
    ``platform`` from before the library is imported; output captured."""
    return run_python("-c", prelude(platform) + code, *args, timeout=timeout, env=env)


def command_as(platform: str, code: str) -> list[str]:
    """The arguments after the interpreter of :func:`run_as`, for a test that starts the process itself."""
    return ["-c", prelude(platform) + code]


_LINUX_ONLY = (
    (re.compile(r"""[fbr]?["']/proc\b"""), "reads Linux's /proc"),
    (re.compile(r"""["'](setpriv|unshare)["']"""), "runs util-linux setpriv or unshare (Linux namespaces)"),
)


def linux_only_reason(source: str) -> str | None:
    """Why a test module whose code is ``source`` runs only on Linux (a ``/proc`` path, ``setpriv``, ``unshare``),
    or ``None``: what ``tests/conftest.py`` skips the module's tests with elsewhere."""
    for pattern, reason in _LINUX_ONLY:
        if pattern.search(source):
            return f"Linux only: {reason}"
    return None
