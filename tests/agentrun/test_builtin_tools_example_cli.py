"""``examples/builtin_tools.py`` runs as documented, on the offline backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "builtin_tools.py"


def run_example(*arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--offline", *arguments],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    return completed.stdout


def test_approving_every_call_runs_them_and_the_policy_asks_only_for_what_it_leaves_open():
    out = run_example("--yes")

    asking, with_policy = out.split("With a policy:")
    assert asking.count("Claude wants to run Bash") == 2
    assert "The last command said: notes.txt" in asking
    # The policy lets `ls` run at once: only the `echo` command is put to the person.
    assert with_policy.count("Claude wants to run Bash") == 1
    assert "{'command': 'echo hello > notes.txt'}" in with_policy
    assert "Files: ['notes.txt']" in out


def test_denying_every_call_runs_none_of_them():
    out = run_example("--no")

    assert "The user said no." in out
    assert "Files: []" in out
