"""The shell session of ``docs/testing.md`` runs as the guide says: with bash, against a real PostgreSQL and the
standalone backend. (Its Python blocks run with every other page's, in tests/docs/test_code_blocks.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.doc_blocks import code_blocks
from tests._support.postgres import PostgresServer, PostgresUnavailableError

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "testing.md"


[SHELL_SESSION] = [
    block.code for block in code_blocks(GUIDE) if block.language == "bash" and "claudecode-model backend" in block.code
]


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: the package importable, this interpreter's scripts first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": path, **extra}


def test_the_durable_workers_example_runs_offline_as_the_guide_says(tmp_path: Path):
    try:
        server = PostgresServer()
    except PostgresUnavailableError as error:
        pytest.skip(str(error))
    with server:
        dsn = server.dsn(server.create_database())
        (tmp_path / "examples").symlink_to(ROOT / "examples")
        completed = subprocess.run(
            ["bash", "-e", "-c", SHELL_SESSION],
            cwd=tmp_path,
            env=user_env(DURABLE_DATABASE_URL=dsn),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    outputs = completed.stdout.splitlines()
    assert len([line for line in outputs if not line.startswith("export ")]) == 2, completed.stdout  # two answers
    assert not (tmp_path / "offline.env").exists()  # the backend removed it when it stopped
    result = (tmp_path / "result.json").read_text()
    assert "mcp__pydantic_tools__three" in result  # the brain called the tools of the chain
