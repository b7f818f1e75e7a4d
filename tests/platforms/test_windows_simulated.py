"""The library's Windows branches, each in a fresh interpreter whose ``sys.platform`` is ``"win32"`` from before the
library is imported (``tests/_support/platforms.py``), with the Windows API faked at the platform layer: finding
``claude.exe`` (never npm's ``claude.cmd``), refusing the stdio transport with the transport that works, the lifeline
as a Job Object, and sweeping dead owners' folders without a signal or a uid."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests._support.platforms import run_as

FAKE = """
import sys
sys.path.insert(0, {tests!r})
from tests.platforms.fake_windows import FakeWindows
from claudecode_model._process.platform import windows
fake = FakeWindows()
windows.use_api(fake)
"""

ROOT = str(Path(__file__).resolve().parents[2])


def run_windows(code: str, *args: str) -> dict[str, object]:
    """Run ``code`` under the Windows branch with the fake API as ``fake``; what it prints last, as JSON."""
    completed = run_as("win32", FAKE.format(tests=ROOT) + textwrap.dedent(code), *args)
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def assert_says(message: object, *parts: str) -> None:
    """``message`` is a text that holds every one of ``parts``."""
    assert isinstance(message, str)
    for part in parts:
        assert part in message


def test_the_bundled_claude_exe_is_found(tmp_path: Path):
    (tmp_path / "claude").write_text("")  # the Linux wheel's name: not the Windows one
    (tmp_path / "claude.exe").write_text("")
    result = run_windows(
        """
        import json, sys
        from pathlib import Path
        from claudecode_model._process import binary
        binary.bundled_cli_dir = lambda: Path(sys.argv[1])
        print(json.dumps({"cli": str(binary.find_cli())}))
        """,
        str(tmp_path),
    )

    assert result == {"cli": str(tmp_path / "claude.exe")}


def test_on_path_only_claude_exe_counts_and_npm_s_claude_cmd_is_refused(tmp_path: Path):
    npm, native, nothing = tmp_path / "npm", tmp_path / "native", tmp_path / "home"
    for folder in (npm, native, nothing):
        folder.mkdir()
    (npm / "claude.cmd").write_text("@echo off")
    (native / "claude.exe").write_text("")
    result = run_windows(
        """
        import json, os, sys
        from pathlib import Path
        from claudecode_model._process import binary
        from claudecode_model.exceptions import CLINotFoundError
        binary.bundled_cli_dir = lambda: Path(sys.argv[3])  # a wheel without the CLI
        os.environ["HOME"] = sys.argv[3]
        found = {}
        for name, path in (("both", os.pathsep.join(sys.argv[1:3])), ("npm only", sys.argv[1]), ("relative", "npm")):
            os.environ["PATH"] = path
            try:
                found[name] = str(binary.find_cli())
            except CLINotFoundError as error:
                found[name] = str(error)
        installed = Path(sys.argv[3], ".local", "bin")  # where the native installer puts it
        installed.mkdir(parents=True)
        (installed / "claude.exe").write_text("")
        os.environ["PATH"] = sys.argv[1]
        found["installed"] = str(binary.find_cli())
        print(json.dumps(found))
        """,
        str(npm),
        str(native),
        str(nothing),
    )

    assert result["both"] == str(native / "claude.exe")
    assert result["installed"] == str(nothing / ".local" / "bin" / "claude.exe")
    for refused in (result["npm only"], result["relative"]):
        assert_says(refused, "Claude Code CLI not found", "claude.cmd cannot be used", "claude.exe")


def test_the_stdio_transport_is_refused_naming_the_sdk_transport():
    result = run_windows(
        """
        import json
        from claudecode_model import ClaudeCodeModel
        from claudecode_model.exceptions import ClaudeCodeSettingsError
        try:
            ClaudeCodeModel(tool_transport="stdio")
        except ClaudeCodeSettingsError as error:
            refused = str(error)
        else:
            refused = None
        ClaudeCodeModel()  # the default ('auto') is fine
        ClaudeCodeModel(tool_transport="sdk")
        print(json.dumps({"refused": refused}))
        """
    )

    assert_says(result["refused"], "tool_transport='stdio'", "AF_UNIX", "use tool_transport='sdk'")


def test_the_lifeline_is_a_job_object_and_starts_no_watcher():
    result = run_windows(
        """
        import json
        from claudecode_model._process import lifeline
        fake.start(4242)
        lifeline.watch("tag-1")
        lifeline.started("tag-1", 4242)
        tied = [sorted(members) for members in fake.jobs.values()]
        fake.program_dies()
        print(json.dumps({"tied": tied, "running": sorted(fake.running), "watcher": lifeline._LIFELINE._channel}))
        """
    )

    assert result == {"tied": [[4242]], "running": [], "watcher": None}


def test_dead_owners_folders_are_swept_by_liveness_not_signals(tmp_path: Path):
    for pid in (7001, 7002):
        (tmp_path / f"claudecode_ipc_{pid}_abc").mkdir()
    result = run_windows(
        """
        import json, sys, types
        sys.modules["msvcrt"] = types.SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0, locking=lambda fd, mode, size: None)
        from claudecode_model.ipc._leftovers import remove_dead_leftovers
        fake.start(7001)  # alive; 7002 is gone
        removed = remove_dead_leftovers(sys.argv[1])
        print(json.dumps({"removed": [path.name for path in removed], "asked": fake.calls}))
        """,
        str(tmp_path),
    )

    assert result["removed"] == ["claudecode_ipc_7002_abc"]
    assert "open_process 7001" in result["asked"]  # type: ignore[operator]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["claudecode_ipc_7001_abc"]


def test_a_request_on_a_loop_that_cannot_start_processes_is_refused_before_any_start():
    result = run_windows(
        """
        import json
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel
        from claudecode_model.exceptions import ClaudeCodeSettingsError
        try:
            Agent(ClaudeCodeModel()).run_sync("hello")  # a selector loop here: not Windows' Proactor loop
        except ClaudeCodeSettingsError as error:
            refused = str(error)
        else:
            refused = None
        print(json.dumps({"refused": refused, "opened": [c for c in fake.calls if c.startswith("open_process")]}))
        """
    )

    assert result["opened"] == []
    refused = result["refused"]
    assert isinstance(refused, str)
    assert refused.startswith("Cannot run Claude Code here: the event loop (")
    assert "use asyncio's default Proactor loop" in refused
