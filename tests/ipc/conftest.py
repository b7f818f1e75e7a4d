"""Fixtures of the IPC bridge tests: example tools, bridge processes, and leak checks after every test."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import claudecode_model.ipc as ipc_package
from claudecode_model.ipc import IPCSession
from tests._support.ipc import BRIDGE_MODULE, Toolbox, bridge_env, bridge_processes, ipc_temp_entries
from tests._support.polling import wait_until
from tests._support.stdio_mcp import StdioMcpClient

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator


@pytest.fixture(autouse=True)
def no_ipc_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """After each test: no ``claudecode_ipc_*`` file or directory and no bridge process is left."""
    before = ipc_temp_entries()
    directories: set[str] = set()
    original_start = IPCSession.start

    async def recording_start(self: IPCSession) -> None:
        try:
            await original_start(self)
        finally:
            with contextlib.suppress(RuntimeError):
                directories.add(str(self.directory))

    monkeypatch.setattr(IPCSession, "start", recording_start)
    yield directories
    left = bridge_processes(directories)
    if left:
        wait_until(lambda: not bridge_processes(directories))
        left = bridge_processes(directories)
    for pid, _ in left:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    assert not left, f"bridge processes left behind: {left}"
    assert not [d for d in directories if os.path.exists(d)], "IPC directories left behind"
    assert ipc_temp_entries() - before == set(), "claudecode_ipc_* entries left behind"


@pytest.fixture
def toolbox() -> Toolbox:
    return Toolbox()


@pytest.fixture
async def session(toolbox: Toolbox) -> AsyncIterator[IPCSession]:
    async with toolbox.session() as started:
        yield started


@pytest.fixture(scope="session")
def light_package_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An import root whose ``claudecode_model/__init__.py`` is empty, with the real ``ipc`` package inside (and the
    package's lazy-export helper, which ``ipc/__init__.py`` uses).

    The bridge imports ``claudecode_model/__init__.py`` first; until the package root is lazy that pulls in
    pydantic-ai (over a second). Tests that are about the bridge itself run it from here: fast, and proof that
    it needs nothing else of the package.
    """
    root = tmp_path_factory.mktemp("light_root")
    (root / "claudecode_model").mkdir()
    (root / "claudecode_model" / "__init__.py").write_text('"""Empty stand-in for the package root."""\n')
    (root / "claudecode_model" / "ipc").symlink_to(Path(ipc_package.__file__).parent, target_is_directory=True)
    package = Path(ipc_package.__file__).parents[1]
    (root / "claudecode_model" / "_lazy.py").symlink_to(package / "_lazy.py")
    return root


@pytest.fixture
async def start_bridge(light_package_root: Path) -> AsyncIterator[object]:
    """``await start_bridge(session)`` runs a bridge (light root) for ``session``; all killed afterwards."""
    bridges: list[StdioMcpClient] = []

    async def start(
        session: IPCSession,
        *,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        light: bool = True,
    ) -> StdioMcpClient:
        bridge = await StdioMcpClient.spawn(
            [
                sys.executable,
                "-m",
                BRIDGE_MODULE,
                *(args if args is not None else [str(session.socket_path), str(session.schema_path)]),
            ],
            env if env is not None else bridge_env(session, light_package_root if light else None),
        )
        bridges.append(bridge)
        return bridge

    yield start
    for bridge in bridges:
        await bridge.aclose()
