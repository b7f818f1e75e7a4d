"""Suites of the IPC bridge transport, without the CLI: bridge start-up and tool-call round trips."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from claude_agent_sdk import create_sdk_mcp_server, tool
from tests._support.stdio_mcp import PROTOCOL_VERSION, StdioMcpClient

from bench._core import BenchContext, BenchError, Metrics, Row, Suite, Target, Variant, check, compared
from claudecode_model.ipc import IPCClient, IPCSession, ToolSchema, bridge_environment
from claudecode_model.ipc._constants import BRIDGE_MODULE

RAW_SERVER = Path(__file__).with_name("_raw_stdio_server.py")
STOP_TIMEOUT = 5.0

ECHO_SCHEMA: ToolSchema = {
    "name": "echo",
    "description": "Returns its text.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


async def _echo(arguments: dict[str, object]) -> dict[str, object]:
    return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}], "isError": False}


def echo_session() -> IPCSession:
    """An IPC session serving one ``echo`` tool."""
    return IPCSession({"echo": _echo}, [ECHO_SCHEMA])


def echoed_text(result: dict[str, Any]) -> str:
    """The text of an MCP tool result (checked not to be an error)."""
    check(not result.get("isError"), f"the echo tool failed: {str(result)[:200]}")
    content = result.get("content") or [{}]
    return str(content[0].get("text", ""))


# --- bridge spawn -> ready ------------------------------------------------------------------------------------


async def spawn_ready(argv: list[str], env: dict[str, str]) -> Metrics:
    """Seconds from spawning a stdio MCP server until it answers ``initialize``; then it is stopped (untimed)."""
    start = time.perf_counter()
    peer = await StdioMcpClient.spawn(argv, env, stderr=subprocess.DEVNULL)
    try:
        response = await peer.initialize("bench")
        elapsed = time.perf_counter() - start
        check("serverInfo" in response.get("result", {}), f"initialize answered {response!r}")
    finally:
        await peer.aclose(grace=STOP_TIMEOUT)
    return {"ready": elapsed}


class BridgeSpawnSuite(Suite):
    """The IPC bridge process against the stdio MCP server a raw SDK user would write with mcp."""

    name = "bridge-spawn"
    description = "spawn a stdio MCP server process and time until it answers initialize"
    row_names = ("bridge-spawn",)
    needs_cli = False

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        async with echo_session() as session:
            bridge_argv = [sys.executable, "-m", BRIDGE_MODULE, str(session.socket_path), str(session.schema_path)]
            bridge_env = {**os.environ, **bridge_environment(session)}
            raw_argv = [sys.executable, str(RAW_SERVER)]
            yield {
                "ours": lambda: spawn_ready(bridge_argv, bridge_env),
                "raw": lambda: spawn_ready(raw_argv, dict(os.environ)),
            }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        ours = medians["ours.ready"]
        return [
            Row(
                key="bridge-spawn",
                name="bridge spawn -> ready (raw: mcp stdio server)",
                ours=ours,
                raw=medians["raw.ready"],
                pair=("ours.ready", "raw.ready"),
                target=Target("<= 0.3 s", 0.3),
                note="raw = the stdio MCP server a raw SDK user writes (mcp's low-level Server)",
                figure=ours,
                figure_text=f"{ours:.3f} s",
            )
        ]


# --- IPC round trips ------------------------------------------------------------------------------------------

PAYLOADS = {"1k": 1024, "10m": 10_000_000}
CALLS_PER_SAMPLE = {"1k": 25, "10m": 1}


class _SdkInProcess:
    """The raw SDK's in-process tool path: a ``create_sdk_mcp_server`` tool behind the SDK's JSON-RPC bridge.

    A call does what the CLI and the SDK do for every in-process tool call: the CLI writes a ``control_request``
    line carrying the JSON-RPC ``tools/call``, the SDK parses it, runs it through mcp's in-memory transport
    (``SdkMcpBridge``) and writes a ``control_response`` line that the CLI parses. The JSON encoding and
    decoding on both ends are part of the round trip, as they are through the bridge.
    ``SdkMcpBridge`` is private SDK API; a change there fails loudly.
    """

    def __init__(self) -> None:
        try:
            from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge
        except ImportError as error:  # depends on the SDK version
            raise BenchError(f"this claude-agent-sdk has no SdkMcpBridge: {error}") from error

        @tool("echo", "Returns its text.", {"text": str})
        async def echo(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": args["text"]}]}

        server = create_sdk_mcp_server("bench", tools=[echo])
        self._bridge = SdkMcpBridge("bench", server["instance"])
        self._ids = itertools.count(1)

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        control = {
            "type": "control_request",
            "request_id": f"req_{request_id}",
            "request": {"subtype": "mcp_message", "server_name": "bench", "message": message},
        }
        line = json.dumps(control) + "\n"  # the CLI's side
        received = json.loads(line)  # the SDK's side from here
        response = await self._bridge.handle(received["request"]["message"])
        answer = {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": received["request_id"],
                "response": {"mcp_response": response},
            },
        }
        back = json.loads(json.dumps(answer) + "\n")  # and the CLI reads it
        mcp_response = back["response"]["response"]["mcp_response"]
        if not isinstance(mcp_response, dict) or "result" not in mcp_response:
            raise BenchError(f"the SDK's in-process server answered {method} with {mcp_response!r}")
        result: dict[str, Any] = mcp_response["result"]
        return result

    async def start(self) -> None:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        await self._request("initialize", params)
        await self._bridge.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, text: str) -> str:
        return echoed_text(await self._request("tools/call", {"name": "echo", "arguments": {"text": text}}))

    async def aclose(self) -> None:
        await self._bridge.aclose()


async def _connections_closed(session: IPCSession) -> None:
    """Wait until the session has seen its clients go (so that stopping it cancels no connection handler)."""
    deadline = time.monotonic() + STOP_TIMEOUT
    while session.connection_count and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def _per_call(call: Any, text: str, calls: int) -> Metrics:
    durations = []
    for _ in range(calls):
        start = time.perf_counter()
        echoed = await call(text)
        durations.append(time.perf_counter() - start)
        check(echoed == text, f"the echo came back with {len(echoed)} characters instead of {len(text)}")
    return {"round_trip": statistics.median(durations)}


class IPCRoundTripSuite(Suite):
    """One echo tool call carrying the payload both ways: IPCClient -> IPCSession, the same through the bridge
    process (MCP JSON-RPC on its stdio), and the raw SDK's in-process tool path."""

    name = "ipc"
    description = "an echo tool call carrying 1 KB / 10 MB both ways"
    row_names = ("ipc-1k", "ipc-1k-bridge", "ipc-10m", "ipc-10m-bridge")
    needs_cli = False
    settle_between = False  # the bridge process lives for the whole suite

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        async with echo_session() as session, contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(_connections_closed, session)
            client = await IPCClient.connect(session.socket_path, session.secret)
            stack.push_async_callback(client.aclose)
            argv = [sys.executable, "-m", BRIDGE_MODULE, str(session.socket_path), str(session.schema_path)]
            bridge = await StdioMcpClient.spawn(
                argv, {**os.environ, **bridge_environment(session)}, stderr=subprocess.DEVNULL
            )
            stack.push_async_callback(bridge.aclose, STOP_TIMEOUT)
            await bridge.initialize("bench")
            call_ids = itertools.count(1)
            sdk = _SdkInProcess()
            stack.push_async_callback(sdk.aclose)
            await sdk.start()

            async def via_client(text: str) -> str:
                return echoed_text(dict(await client.call_tool("echo", {"text": text})))

            async def via_bridge(text: str) -> str:
                return echoed_text(await bridge.call(next(call_ids), "echo", {"text": text}, within=60))

            variants: dict[str, Variant] = {}
            for size_name, size in PAYLOADS.items():
                text = "x" * size
                calls = CALLS_PER_SAMPLE[size_name]
                variants[f"ours_{size_name}"] = functools.partial(_per_call, via_client, text, calls)
                variants[f"bridge_{size_name}"] = functools.partial(_per_call, via_bridge, text, calls)
                variants[f"raw_{size_name}"] = functools.partial(_per_call, sdk.call, text, calls)
            yield variants

    def rows(self, medians: dict[str, float]) -> list[Row]:
        rows = []
        for size_name, label in (("1k", "1 KB"), ("10m", "10 MB")):
            rows.append(
                compared(
                    medians,
                    f"ipc-{size_name}",
                    f"IPC round trip {label} (IPCClient)",
                    f"ours_{size_name}.round_trip",
                    f"raw_{size_name}.round_trip",
                    note="raw = the SDK's in-process tool path (control_request JSON in, mcp in-memory, JSON out)",
                )
            )
            rows.append(
                compared(
                    medians,
                    f"ipc-{size_name}-bridge",
                    f"IPC round trip {label} (via bridge)",
                    f"bridge_{size_name}.round_trip",
                    f"raw_{size_name}.round_trip",
                )
            )
        return rows
