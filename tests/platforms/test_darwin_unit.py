"""The macOS branch of the platform layer: the memory cap from the physical memory, the IPC peer check through
``LOCAL_PEERCRED`` / ``LOCAL_PEERPID``, no ``/proc`` (nothing is found by tag), the 103-byte socket path limit, and the
CLI's login asked of ``claude auth status`` (the Keychain holds it)."""

from __future__ import annotations

import json
import struct
import textwrap
from pathlib import Path

import pytest

from claudecode_model._process.platform import darwin
from tests._support.platforms import run_as


class PeerSocket:
    """A Unix socket's peer as macOS reports it."""

    def __init__(self, uid: int, pid: int | None, version: int = 0) -> None:
        self.xucred = struct.pack("=IIh2x16I", version, uid, 1, *([20] + [0] * 15))
        self.pid = pid
        self.asked: list[tuple[int, int]] = []

    def getsockopt(self, level: int, option: int, size: int = 0) -> bytes | int:
        self.asked.append((level, option))
        if option == 0x001:  # LOCAL_PEERCRED
            assert size == 76  # sizeof(struct xucred)
            return self.xucred
        if self.pid is None:
            raise OSError(42, "Protocol not available")
        return self.pid


def test_the_peer_s_uid_and_pid_are_read_from_local_peercred_and_local_peerpid():
    peer = PeerSocket(uid=501, pid=777)

    assert darwin.peer_credentials(peer) == (777, 501)
    assert peer.asked == [(0, 0x001), (0, 0x002)]  # SOL_LOCAL; LOCAL_PEERCRED, LOCAL_PEERPID


def test_a_system_that_does_not_tell_the_pid_still_has_the_uid_checked():
    assert darwin.peer_credentials(PeerSocket(uid=0, pid=None)) == (None, 0)


def test_an_unknown_credentials_version_is_refused():
    with pytest.raises(OSError, match="xucred version"):
        darwin.peer_credentials(PeerSocket(uid=0, pid=1, version=7))


def test_the_default_cap_counts_half_the_physical_memory(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(darwin, "physical_memory_bytes", lambda: 16 * 1024**3)

    assert darwin.available_memory_mb() == 8192  # 32 CLIs at 250 MB, not the 80 of 8 per CPU on 10 cores

    monkeypatch.setattr(darwin, "physical_memory_bytes", lambda: None)
    assert darwin.available_memory_mb() is None


def test_without_proc_nothing_is_found_by_tag_and_the_group_is_what_stops():
    assert darwin.LIFELINE == "groups"
    assert darwin.guarded_cli_path(Path("/opt/claude")) == Path("/opt/claude")  # no death-signal launcher
    assert darwin.stop_tagged(["any"]) == 0
    assert darwin.signal_tagged(["any"], force=True) == 0
    assert not darwin.process_exiting(1)
    assert darwin.MAX_SOCKET_PATH == 103


def test_the_macos_branch_keeps_socket_paths_within_103_bytes_and_starts_no_death_signal_launcher(tmp_path):
    """Under the macOS branch: the IPC socket path limit, the default cap from (faked) physical memory, and the CLI
    started as itself (no ``PR_SET_PDEATHSIG`` launcher)."""
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    code = textwrap.dedent(
        """
        import json, os, sys, tempfile
        from pathlib import Path
        tempfile.tempdir = sys.argv[1]  # too deep for a 103-byte socket path: /tmp is taken instead
        from claudecode_model._process import platform, slots
        from claudecode_model._process.platform import darwin
        from claudecode_model.ipc._session import _MAX_SOCKET_PATH, _socket_base_directory
        darwin.physical_memory_bytes = lambda: 4 * 1024**3
        print(json.dumps({
            "limit": _MAX_SOCKET_PATH,
            "base": _socket_base_directory(40),
            "cap": slots.default_max_processes(),
            "cli": str(platform.guarded_cli_path(Path("/opt/claude"))),
        }))
        """
    )

    completed = run_as("darwin", code, str(deep))

    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result == {"limit": 103, "base": "/tmp", "cap": 8, "cli": "/opt/claude"}  # 2048 MB / 250 MB


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (
            {"loggedIn": True, "authMethod": "claude.ai"},
            "[ok]   credentials: login in the macOS Keychain (claude.ai, as `claude auth status` reports) "
            "(values not shown)",
        ),
        ({"loggedIn": False, "authMethod": "none"}, "[warn] credentials: none found;"),
    ],
)
def test_doctor_finds_the_keychain_login_by_asking_the_cli(tmp_path, status: dict[str, object], expected: str):
    """macOS keeps the login in the Keychain, not ``.credentials.json``: doctor asks ``claude auth status``."""
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'auth status' ] || exit 3\necho '{json.dumps(status)}'\n")
    cli.chmod(0o755)
    code = "import sys\nfrom pathlib import Path\nfrom claudecode_model.cli import _credentials\n"
    code += "print('\\n'.join(_credentials(Path(sys.argv[1]))))\n"
    logged_out = {"CLAUDE_CONFIG_DIR": str(tmp_path / "config"), "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}

    completed = run_as("darwin", code, str(cli), env=logged_out)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[0].startswith(expected), completed.stdout
