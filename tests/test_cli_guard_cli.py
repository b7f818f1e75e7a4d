"""The guard of tests/_support/cli_guard.py: a test that starts the CLI without the ``cli`` marker fails, naming
the marker; its marked twin passes, and a test that starts no CLI needs no marker."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[1]

TWINS = """
import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel


def ask(backend):
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        assert Agent(model).run_sync("Capital of France?").output == "Paris"
    finally:
        model.close()


def test_unmarked(claude_backend):
    claude_backend.set_brain("Paris")
    ask(claude_backend)


@pytest.mark.cli
def test_marked(claude_backend):
    claude_backend.set_brain("Paris")
    ask(claude_backend)


def test_no_cli(claude_backend):
    claude_backend.set_brain("Paris")
    assert claude_backend.cli_env()
"""


def test_an_unmarked_test_that_starts_the_cli_fails_naming_the_marker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # `tests._support.cli_guard` for the child pytest
    pytester.makepyfile(test_twins=TWINS)

    result = pytester.runpytest_subprocess("-p", "tests._support.cli_guard", "-p", "no:cacheprovider", timeout=300)

    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_unmarked*",
            "*test_twins.py::test_unmarked started the Claude Code CLI 1 time(s) but has no `cli` marker: "
            "mark it `@pytest.mark.cli`*",
        ]
    )
    assert "test_marked started" not in result.stdout.str()
    assert "test_no_cli started" not in result.stdout.str()
