"""The Claude Code versions the suite has passed on, and what the library says about a CLI outside them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from claudecode_model import ClaudeCodeModel
from claudecode_model._process.binary import TESTED_CLI_VERSIONS, bundled_cli_path, cli_version, support_note


def test_the_bundled_cli_is_in_the_tested_range() -> None:
    bundled = bundled_cli_path()
    assert bundled is not None

    assert support_note(cli_version(bundled)) is None


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ((2, 1, 100), "Claude Code 2.1.100 is older than tested"),
        ((3, 0, 0), "Claude Code 3.0.0 is newer than tested"),
        (None, "the CLI's version is unknown"),
    ],
)
def test_a_version_outside_the_range_is_named_with_the_range(version: tuple[int, ...] | None, says: str) -> None:
    oldest, newest = (".".join(map(str, v)) for v in TESTED_CLI_VERSIONS)
    tested = oldest if oldest == newest else f"{oldest} to {newest}"

    note = support_note(version)

    assert note is not None
    assert note.startswith(says)
    assert f"tested with Claude Code {tested}" in note


def test_a_model_on_a_users_own_cli_says_at_debug_that_its_version_is_untested(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    own_cli = tmp_path / "claude"
    own_cli.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    own_cli.chmod(0o755)
    model = ClaudeCodeModel(cli_path=own_cli)

    with caplog.at_level(logging.DEBUG, logger="claudecode_model"):
        assert model.cli_path == own_cli

    [record] = [r for r in caplog.records if "Claude Code CLI" in r.getMessage()]
    assert f"Claude Code CLI {own_cli}, version 9.9.9: Claude Code 9.9.9 is newer than tested" in record.getMessage()
