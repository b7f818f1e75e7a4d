"""Fixtures of the Tavily tests: a local Tavily stand-in, fast-retry deps, and a leak check."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from typing import TYPE_CHECKING

import pytest

from claudecode_model.tavily import TavilySearchDeps
from claudecode_model.tavily.testing import FakeTavilyServer

if TYPE_CHECKING:
    from collections.abc import Iterator


def _open_fds() -> set[str]:
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if _readable(fd)}


def _readable(fd: str) -> bool:
    try:
        os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return True


def _temp_entries() -> set[str]:
    return set(os.listdir(tempfile.gettempdir()))


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread not in before and thread.name != _CLOCK_THREAD]


_CLOCK_THREAD = "claudecode-model-clock"


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Every test ends without extra threads, sockets or files in the temp dir.

    (The project-wide guard in tests/conftest.py checks child processes and IPC files.)
    """
    threads_before = set(threading.enumerate())
    sockets_before = {fd for fd in _open_fds() if fd.startswith("socket:")}
    temp_before = _temp_entries()
    yield
    leaked_temp = _temp_entries() - temp_before
    assert not leaked_temp, f"temp files left behind: {sorted(leaked_temp)}"
    # A thread whose owner stopped it (an AnyIO worker is told to stop when its event loop's root task ends) is
    # given a bounded moment to finish; one that keeps running is a leak.
    # The library's one clock thread (claudecode_model._process.clock) lives as long as the process, by design.
    deadline = time.monotonic() + 5
    for thread in _new_threads(threads_before):
        thread.join(timeout=max(deadline - time.monotonic(), 0))
    leaked_threads = _new_threads(threads_before)
    assert not leaked_threads, f"threads left running: {leaked_threads}"
    leaked_sockets = {fd for fd in _open_fds() if fd.startswith("socket:")} - sockets_before
    assert not leaked_sockets, f"sockets left open: {leaked_sockets}"


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never pick up a real key from the environment."""
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)


@pytest.fixture(scope="session")
def shared_tavily() -> Iterator[FakeTavilyServer]:
    """One stand-in for the whole session (stopping uvicorn takes ~0.2 s, too long to pay per test)."""
    with FakeTavilyServer() as server:
        yield server


@pytest.fixture
def fake_tavily(shared_tavily: FakeTavilyServer) -> Iterator[FakeTavilyServer]:
    """The stand-in with an empty request log, no pending failures and generated results.

    Afterwards, slow answers a timeout test left pending are cut short, and every connection must close.
    """
    shared_tavily.reset()
    yield shared_tavily
    shared_tavily.reset()
    shared_tavily.wait_idle()


@pytest.fixture
def deps(fake_tavily: FakeTavilyServer) -> TavilySearchDeps:
    """Deps pointing at the stand-in, with millisecond backoff (waits 1, 2, 4 ms)."""
    return TavilySearchDeps(
        api_key=fake_tavily.api_key,
        api_base_url=fake_tavily.base_url,
        timeout=5.0,
        backoff_base=0.001,
        backoff_factor=2.0,
    )


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound but never listening, so no other process
    (another pytest worker's server included) can take it meanwhile, as it could a port bound and released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
