"""The Claude Code versions the suite has passed on, and what the library says about a CLI outside them."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import pytest

from claudecode_model import ClaudeCodeModel
from claudecode_model._process.binary import (
    TESTED_CLI_VERSIONS,
    bundled_cli_path,
    cli_version,
    cli_version_async,
    support_note,
)
from tests._support.polling import wait_for


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


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for the CLI")
async def test_asking_a_version_that_is_given_up_kills_the_asked_binary_and_leaves_its_reaping_to_asyncio(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request cancelled while a user's own CLI is asked for its version: the binary is killed and reaped, and
    asyncio's child watcher (which the kill must not race) has nothing to say."""
    caplog.set_level(logging.WARNING, logger="asyncio")
    pid_file = tmp_path / "pid"
    silent = tmp_path / "claude"
    silent.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 30\n')
    silent.chmod(0o755)

    asking = asyncio.ensure_future(cli_version_async(silent))
    assert await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
    pid = int(pid_file.read_text())
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking

    with pytest.raises(ProcessLookupError):  # killed and reaped (waited for by the cancelled ask)
        os.kill(pid, 0)
    await asyncio.sleep(0.1)  # what the watcher's thread would log comes after its wait
    assert [record.getMessage() for record in caplog.records] == []
