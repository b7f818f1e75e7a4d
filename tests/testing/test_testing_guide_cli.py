"""``docs/testing.md`` runs: every code block of the testing guide, as a user would run it (scripts with Python,
the pytest module with pytest, the shell session with bash against a real PostgreSQL and the standalone backend)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.postgres import PostgresServer, PostgresUnavailableError
from tests._support.subprocesses import run_python

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "testing.md"


def blocks(language: str) -> list[str]:
    return [code for info, code in re.findall(r"```(\w+)\n(.*?)```", GUIDE.read_text(), re.S) if info == language]


SCRIPTS = [code for code in blocks("python") if not code.startswith("# test_")]
[PYTEST_MODULE] = [code for code in blocks("python") if code.startswith("# test_")]
[PYTEST_CONFIG] = blocks("toml")
[SHELL_SESSION] = blocks("bash")


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: the package importable, this interpreter's scripts first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": path, **extra}


def test_the_guide_has_a_block_for_each_subject():
    assert len(SCRIPTS) == 8


@pytest.mark.parametrize("code", SCRIPTS, ids=lambda code: str(SCRIPTS.index(code)))
def test_each_script_of_the_guide_runs_quietly(code: str, tmp_path: Path):
    script = tmp_path / "example.py"
    script.write_text(code)
    completed = run_python(str(script), cwd=tmp_path, env=user_env(), timeout=240)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""


def test_the_pytest_module_of_the_guide_passes(tmp_path: Path):
    name = PYTEST_MODULE.splitlines()[0].removeprefix("# ").strip()
    (tmp_path / name).write_text(PYTEST_MODULE)
    (tmp_path / "pyproject.toml").write_text(PYTEST_CONFIG)
    completed = run_python(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", name, cwd=tmp_path, env=user_env(), timeout=240
    )
    output = completed.stdout + completed.stderr

    assert completed.returncode == 0, output
    assert "2 passed" in output
    assert "warnings summary" not in output, output


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
