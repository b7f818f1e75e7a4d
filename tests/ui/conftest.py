"""Fixtures of the UI stream tests: the official npm clients under Node, and an ASGI app served on loopback."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests._support.asgi import serve_asgi

ROOT = Path(__file__).resolve().parents[2]
NODE_SOURCES = Path(__file__).resolve().parent / "node"
NODE_CACHE = ROOT / ".cache" / "node-ui"
INSTALL = ROOT / "scripts" / "install-node-ui"

ReadStream = Callable[[str, str, str], Awaitable[dict[str, Any]]]


def _wanted_stamp() -> str:
    """What scripts/install-node-ui writes after installing from the current package files."""
    lines = []
    for name in ("package-lock.json", "package.json"):
        path = NODE_SOURCES / name
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  tests/ui/node/{name}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _installed() -> bool:
    stamp = NODE_CACHE / ".installed"
    return stamp.is_file() and stamp.read_text().strip() == _wanted_stamp() and (NODE_CACHE / "node_modules").is_dir()


@pytest.fixture(scope="session")
def node_clients() -> Path:
    """The directory holding the npm clients and the reader script (installed with npm ci when missing)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the UI stream tests read the streams with the npm clients under node")
    # The cache is shared by every pytest process (xdist workers): one installs and refreshes the reader at a time,
    # and the reader is replaced atomically, so a worker's node never reads a half-written script.
    NODE_CACHE.parent.mkdir(parents=True, exist_ok=True)
    with open(NODE_CACHE.parent / ".node-ui.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            # Outside a loopback-only namespace this installs from the npm registry; `make test` installs beforehand.
            # Without network (inside the namespace) npm gives up at once instead of retrying for minutes.
            completed = subprocess.run(
                [str(INSTALL)],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
                env={**os.environ, "npm_config_fetch_retries": "0", "npm_config_fetch_timeout": "20000"},
            )
            if completed.returncode != 0 or not _installed():
                pytest.fail(
                    "the npm clients of the UI stream tests are not installed and could not be installed here "
                    f"(run `make node-ui` or {INSTALL} with network access to the npm registry):\n{completed.stderr}"
                )
        _place_reader()
    return NODE_CACHE


def _place_reader() -> None:
    """Put the current read_stream.mjs into the cache, by rename (only when it changed)."""
    source = (NODE_SOURCES / "read_stream.mjs").read_bytes()
    target = NODE_CACHE / "read_stream.mjs"
    if target.is_file() and target.read_bytes() == source:
        return
    staging = target.with_name(f".read_stream.{os.getpid()}.mjs")
    staging.write_bytes(source)
    os.replace(staging, target)


@pytest.fixture
def read_stream(node_clients: Path) -> ReadStream:
    """``await read_stream(protocol, url, prompt)``: what the official client read from the served run."""

    async def read(protocol: str, url: str, prompt: str) -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            "node",
            str(node_clients / "read_stream.mjs"),
            protocol,
            url,
            prompt,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, f"the {protocol} client rejected the stream:\n{stderr.decode()}"
        result: dict[str, Any] = json.loads(stdout)
        return result

    return read


@pytest.fixture
def serve_app() -> Callable[[Any], Any]:
    """``async with serve_app(app) as url``: the app served on 127.0.0.1 in the test's event loop."""
    return serve_asgi
