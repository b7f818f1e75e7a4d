"""Whether ``setpriv`` supports ``--pdeathsig`` is asked once per binary, not on every new process's first CLI
start: the answer is remembered in the launcher directory, and a changed binary is asked again."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claudecode_model._process.platform import linux_launcher as _launcher


@pytest.fixture
def fake_setpriv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A ``setpriv`` on an otherwise empty ``PATH`` (exit status 0: it supports ``--pdeathsig``), a private cache
    directory, and a fresh in-process cache of the answer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    setpriv = bin_dir / "setpriv"
    setpriv.write_text("#!/bin/sh\nexit 0\n")
    setpriv.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _launcher._setpriv.cache_clear()
    yield setpriv
    _launcher._setpriv.cache_clear()


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands the launcher module runs."""
    commands: list[list[str]] = []
    run = subprocess.run

    def recording_run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        commands.append(command)
        return run(command, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording_run)
    return commands


def test_a_supporting_setpriv_is_asked_once_then_remembered(fake_setpriv: Path, asked: list[list[str]]):
    assert _launcher._setpriv() == str(fake_setpriv)
    _launcher._setpriv.cache_clear()  # as a new process would start

    assert _launcher._setpriv() == str(fake_setpriv)
    assert asked == [[str(fake_setpriv), "--pdeathsig", "KILL", "--", "true"]]


def test_a_refusing_setpriv_is_remembered_too(fake_setpriv: Path, asked: list[list[str]]):
    fake_setpriv.write_text("#!/bin/sh\necho 'unrecognized option --pdeathsig' >&2\nexit 1\n")

    assert _launcher._setpriv() is None
    _launcher._setpriv.cache_clear()

    assert _launcher._setpriv() is None
    assert len(asked) == 1


def test_a_changed_setpriv_is_asked_again(fake_setpriv: Path, asked: list[list[str]]):
    assert _launcher._setpriv() == str(fake_setpriv)
    _launcher._setpriv.cache_clear()
    fake_setpriv.write_text("#!/bin/sh\n# upgraded, and now refusing\nexit 1\n")

    assert _launcher._setpriv() is None
    assert len(asked) == 2


def test_a_setpriv_that_did_not_answer_is_not_remembered(
    fake_setpriv: Path, asked: list[list[str]], monkeypatch: pytest.MonkeyPatch
):
    run = subprocess.run

    def slow_once(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        if len(asked) == 0:
            asked.append(command)
            raise subprocess.TimeoutExpired(command, 10)
        return run(command, **kwargs)

    monkeypatch.setattr(subprocess, "run", slow_once)

    assert _launcher._setpriv() is None  # no launcher with setpriv this time
    _launcher._setpriv.cache_clear()

    assert _launcher._setpriv() == str(fake_setpriv)  # the same binary, asked again
    assert len(asked) == 2


def test_the_remembered_answer_is_private(fake_setpriv: Path, tmp_path: Path):
    assert _launcher._setpriv() == str(fake_setpriv)

    [remembered] = (tmp_path / "cache" / "claudecode-model" / "launchers").glob("setpriv-*")
    assert remembered.stat().st_mode & 0o077 == 0
    assert remembered.parent.stat().st_mode & 0o077 == 0
