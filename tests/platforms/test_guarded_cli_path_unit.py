"""Only Linux starts the CLI through a death-signal launcher: macOS's and Windows' ``guarded_cli_path`` return the
CLI's own path and write no launcher."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from claudecode_model._process.platform import darwin, windows


@pytest.mark.parametrize("branch", [darwin, windows], ids=["darwin", "win32"])
def test_macos_and_windows_start_the_cli_as_itself(
    branch: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cli = tmp_path / "claude"

    assert branch.guarded_cli_path(cli) == cli
    assert not (tmp_path / "cache").exists()
