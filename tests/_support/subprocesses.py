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
    *args: str,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run this interpreter with ``args``, output captured: in ``base_env`` (this process's environment by default)
    with ``SRC_DIR`` first on its path and ``env`` added, ``stdin`` (if given) on its standard input."""
    base = os.environ if base_env is None else base_env
    path = os.pathsep.join(filter(None, [str(SRC_DIR), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**base, "PYTHONPATH": path, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
