"""``CLISession`` through its transport seam: a transport that is no process is stopped through the seam."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from anyio.abc import Process
from claude_agent_sdk import ClaudeAgentOptions

from claudecode_model._sessions.session import CLISession
from claudecode_model._sessions.transport import CLITransport, CLITransports


class _Hanging(CLITransport):
    """A CLI that never finishes connecting, until it is stopped."""

    def __init__(self) -> None:
        self.stops: list[bool] = []
        self._stopped = asyncio.Event()

    @property
    def process(self) -> Process | None:
        return None

    def stopped(self, *, force: bool) -> None:
        self.stops.append(force)
        self._stopped.set()

    @property
    def ended(self) -> bool:
        return self._stopped.is_set()

    async def connect(self) -> None:
        await self._stopped.wait()
        raise ConnectionError("stopped while connecting")

    async def write(self, data: str) -> None:
        return None

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        await self._stopped.wait()
        return
        yield

    async def close(self) -> None:
        self._stopped.set()

    def is_ready(self) -> bool:
        return False

    async def end_input(self) -> None:
        return None


class _Opens(CLITransports):
    def __init__(self) -> None:
        self.opened: list[_Hanging] = []

    def open(self, options: ClaudeAgentOptions) -> CLITransport:
        self.opened.append(_Hanging())
        return self.opened[-1]


async def test_a_start_given_up_while_connecting_stops_the_transport_at_once() -> None:
    transports = _Opens()
    session = CLISession(ClaudeAgentOptions(), signature="s", transports=transports)
    closed: list[bool] = []
    session.when_closed(lambda: closed.append(True))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await session.start()
    took = time.monotonic() - started

    [transport] = transports.opened
    assert transport.stops[0] is True  # stopped as with SIGKILL
    assert closed == [True]  # nothing of the start runs any more: closed before the error is raised
    assert took < 1.0  # no wait for a process that never comes
    await session.close()
