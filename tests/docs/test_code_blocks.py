"""Every Python block of README.md and docs/*.md runs, as a user would run it, through the real Claude Code CLI.

Each block runs in a fresh interpreter, in an empty working directory of its own, whose environment points the CLI
at one offline backend (``cli_env()``), so that ``ClaudeCodeModel()`` with no arguments reaches it; the backend's
default brain calls every tool once, then answers. A block may use top-level ``await`` (it then runs in
``asyncio.run``). A block that is a pytest module (its first line names the file, ``# test_x.py``) runs with pytest
and the asyncio settings docs/testing.md gives. Markers on the line before a block (see docs/testing.md):
``<!-- needs-login: what -->`` skips it, saying why; ``<!-- needs-postgresql -->`` gives it a fresh database of a
local PostgreSQL server in ``DATABASE_URL`` (skipped where none can start, as the durable tests are).

The blocks run in parallel (as many at once as the machine has CPUs) before the first test reads them; each test
reports one block by page and line, and a traceback of a block names the page's lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from claudecode_model.testing import OfflineBackend
from tests._support.doc_blocks import ROOT, RUNNER, USER_DOCS, CodeBlock, code_blocks, python_blocks
from tests._support.postgres import PostgresServer, PostgresUnavailableError
from tests._support.subprocesses import SRC_DIR

if TYPE_CHECKING:
    from collections.abc import Iterator

BLOCKS = python_blocks()
BLOCK_TIMEOUT = 240.0
"""Seconds one block may take (a block that takes longer fails, saying so)."""

# The first test waits for every block (about 110 s of CPU in all, a minute on two idle cores; several minutes on a
# loaded machine): the suite's 120 s per test is too short for it.
# Under xdist one worker runs the whole module (tests/_support/worker_groups.py): its module fixture runs every
# selected block at once, which each worker given any of its tests would otherwise do again.
pytestmark = [pytest.mark.cli, pytest.mark.timeout(900)]
[PYTEST_CONFIG] = [block.code for block in code_blocks(ROOT / "docs" / "testing.md") if block.language == "toml"]
"""The pytest settings docs/testing.md tells a user to add to ``pyproject.toml`` for async tests."""
CREDENTIALS = ("TAVILY_API_KEY", "LOGFIRE_TOKEN", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "DATABASE_URL")
"""Real credentials a developer's shell may hold: a block never gets them (``cli_env()`` replaces the API key)."""
NOISE = re.compile(r"\w+Warning: |Traceback \(most recent call last\)|Exception ignored in")
"""What a block's stderr must not hold: Python warnings, tracebacks (also of unraisable exceptions at exit)."""
SILENT_PAGE = "docs/testing.md:"
"""The testing guide's blocks write nothing at all to stderr (others may log, e.g. the Tavily example's retries)."""

Outcome = subprocess.CompletedProcess[str] | str
"""A block's run, or why it was not run."""


def run_block(block: CodeBlock, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``block`` in this interpreter, in a temporary working directory that is also its ``TMPDIR``."""
    with tempfile.TemporaryDirectory(prefix="docblock-") as folder:
        workdir = Path(folder)
        if (name := block.pytest_module) is not None:
            (workdir / name).write_text(block.code)
            (workdir / "pyproject.toml").write_text(PYTEST_CONFIG)
            args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", name]
        else:
            (workdir / "block.py").write_text(block.code)
            args = ["-c", RUNNER, str(block.page), str(block.line), "block.py"]
        try:
            return subprocess.run(
                [sys.executable, *args],
                cwd=workdir,
                env={**env, "TMPDIR": folder},
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            output = f"{_text(expired.stdout)}{_text(expired.stderr)}\ntimed out after {BLOCK_TIMEOUT:.0f} s"
            return subprocess.CompletedProcess(expired.cmd, -1, "", output)


def _text(output: str | bytes | None) -> str:
    """A timed-out run's captured output (bytes even with ``text=True``)."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


@contextlib.contextmanager
def postgres_urls(count: int) -> Iterator[list[str] | str]:
    """``count`` fresh databases of a local PostgreSQL server, or why no server could start."""
    if count == 0:
        yield []
        return
    try:
        server = PostgresServer()
    except PostgresUnavailableError as error:
        yield str(error)
        return
    with server:
        yield [server.dsn(server.create_database()) for _ in range(count)]


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest) -> Iterator[dict[str, Outcome]]:
    """The run of every block the session selected, by ``where``; all have ended when the first test starts."""
    selected = [
        cast("CodeBlock", item.callspec.params["block"])  # the parameter of test_block_runs below
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.module is request.module
        and hasattr(item, "callspec")
        and "block" in item.callspec.params
    ]
    runnable = [block for block in selected if block.needs_login is None]
    path = os.pathsep.join(filter(None, [str(SRC_DIR), os.environ.get("PYTHONPATH")]))
    base = {name: value for name, value in os.environ.items() if name not in CREDENTIALS}
    with (
        OfflineBackend() as backend,
        postgres_urls(sum(block.needs_postgresql for block in runnable)) as databases,
        ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool,
    ):
        env = {**base, **backend.cli_env(), "PYTHONPATH": path}
        urls = iter(databases if isinstance(databases, list) else [])
        runs: dict[str, Future[subprocess.CompletedProcess[str]] | str] = {}
        for block in runnable:
            if block.needs_postgresql and isinstance(databases, str):
                runs[block.where] = databases
            else:
                extra = {"DATABASE_URL": next(urls)} if block.needs_postgresql else {}
                runs[block.where] = pool.submit(run_block, block, {**env, **extra})
        yield {where: run if isinstance(run, str) else run.result() for where, run in runs.items()}


def test_the_blocks_of_every_page_are_found():
    pages = {block.page.name for block in BLOCKS}

    assert len(BLOCKS) >= 39
    assert pages >= {"README.md", "testing.md", "toolkit.md", "scaling.md", "tavily.md", "builtin-tools.md"}
    assert all(page in USER_DOCS for page in {block.page for block in BLOCKS})


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_block_runs(block: CodeBlock, outcomes: dict[str, Outcome]):
    if block.needs_login is not None:
        pytest.skip(f"{block.where} needs {block.needs_login}")
    completed = outcomes[block.where]
    if isinstance(completed, str):
        pytest.skip(f"{block.where} needs PostgreSQL: {completed}")
    output = f"the block at {block.where}:\n{completed.stdout}{completed.stderr}"

    assert completed.returncode == 0, output
    if block.pytest_module is not None:
        assert re.search(r"\d+ passed", completed.stdout), output
        assert "warnings summary" not in completed.stdout, output
    assert not NOISE.search(completed.stderr), output
    if block.where.startswith(SILENT_PAGE):
        assert completed.stderr == "", output
