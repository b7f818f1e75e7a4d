"""IPC directories left by dead processes are removed by the next session; those of live processes never are."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from claudecode_model.ipc._leftovers import directory_prefix, remove_dead_leftovers


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_the_directories_of_dead_owners_are_removed(tmp_path: Path):
    dead = tmp_path / f"claudecode_ipc_{dead_pid()}_abcdefgh"
    dead.mkdir()
    (dead / "claudecode_ipc_schema_x.json").write_text("[]")
    mine = tmp_path / f"{directory_prefix()}abcdefgh"
    mine.mkdir()
    live_parent = tmp_path / f"claudecode_ipc_{os.getppid()}_abcdefgh"
    live_parent.mkdir()
    old_style = tmp_path / "claudecode_ipc_abcdefgh"  # no owner pid in the name
    old_style.mkdir()
    other = tmp_path / "unrelated_123_x"
    other.mkdir()

    removed = remove_dead_leftovers(tmp_path)

    assert removed == [dead]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        path.name for path in (mine, live_parent, old_style, other)
    )


def test_a_directory_whose_socket_still_answers_is_kept():
    tmp_path = Path(tempfile.mkdtemp(dir="/tmp"))  # short: a socket path must stay under 108 bytes
    directory = tmp_path / f"claudecode_ipc_{dead_pid()}_abcdefgh"  # e.g. a live owner in another pid namespace
    directory.mkdir()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(directory / "claudecode_ipc_x.sock"))
        listener.listen(1)

        assert remove_dead_leftovers(tmp_path) == []
    finally:
        listener.close()

    try:
        assert remove_dead_leftovers(tmp_path) == [directory]  # nobody listens any more
    finally:
        shutil.rmtree(tmp_path)
