"""Running this project's Python in a child process, as a user would from a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import claudecode_model

if TYPE_CHECKING:
    from collections.abc import Mapping

SRC_DIR = Path(claudecode_model.__file__).resolve().parents[1]
"""The folder that holds the ``claudecode_model`` package the tests import."""


def run_python(
    *args: str, timeout: float, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run this interpreter with ``args`` (``SRC_DIR`` first on its path, ``env`` added), output captured."""
    path = os.pathsep.join(filter(None, [str(SRC_DIR), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
