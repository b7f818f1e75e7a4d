"""A sweep never removes a CLI temp folder in use, even when its owner's pid is not visible (issue 39: a sweep from
another process sharing the temp dir removed a live CLI's folder)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudecode_model._process.temp import CLI_TEMP_PREFIX, TEMP_DIR_VARIABLE, private_cli_temp
from claudecode_model.ipc._leftovers import remove_dead_leftovers


def unused_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


@pytest.fixture
def short_temp_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp dir short enough for the CLI's socket paths (the CLI's folders are made there, not in ``/tmp``)."""
    base = Path(tempfile.mkdtemp(prefix="sw", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.delenv(TEMP_DIR_VARIABLE, raising=False)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_a_folder_in_use_survives_a_sweep_that_cannot_see_its_owner(short_temp_dir: Path):
    env, remove = private_cli_temp({})
    folder = Path(env[TEMP_DIR_VARIABLE])
    assert folder.parent == short_temp_dir
    # As another PID namespace sees it: the folder's owner pid does not exist there.
    seen_elsewhere = folder.with_name(f"{CLI_TEMP_PREFIX}{unused_pid()}_elsewhere")
    folder.rename(seen_elsewhere)

    assert remove_dead_leftovers(short_temp_dir, CLI_TEMP_PREFIX) == []
    assert seen_elsewhere.is_dir()

    remove()  # the owner is done with it (its lock released): a later sweep removes the leftover
    assert remove_dead_leftovers(short_temp_dir, CLI_TEMP_PREFIX) == [seen_elsewhere]
