"""The bridge process, driven over MCP JSON-RPC on its stdin/stdout like the Claude Code CLI does."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from claudecode_model.ipc import MAX_MESSAGE_SIZE, SECRET_ENV_VAR, IPCSession
from claudecode_model.ipc import bridge as bridge_module
from claudecode_model.ipc._framing import encode_message
from claudecode_model.ipc._protocol import error_response
from tests._support.ipc import Toolbox, bridge_env, text_result
from tests._support.polling import wait_until
from tests._support.stdio_mcp import StdioMcpClient

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    StartBridge = Callable[..., Awaitable[StdioMcpClient]]

HEAVY_MODULES = (
    "mcp",
    "pydantic",
    "pydantic_ai",
    "pydantic_core",
    "claude_agent_sdk",
    "anyio",
    "asyncio",
    "httpx",
)


@pytest.fixture
async def bridge(session: IPCSession, start_bridge: StartBridge) -> StdioMcpClient:
    started = await start_bridge(session)
    await started.initialize()
    return started


# --- the MCP surface ----------------------------------------------------------------------------------------


async def test_initialize_negotiates_the_protocol(session: IPCSession, start_bridge: StartBridge) -> None:
    bridge = await start_bridge(session)
    response = await bridge.initialize()
    assert response["result"] == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "claudecode-model-ipc-bridge", "version": "1.0.0"},
    }
    unknown = await bridge.request(2, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {}})
    assert unknown["result"]["protocolVersion"] == "2025-11-25"


async def test_server_discover_is_method_not_found_so_the_cli_falls_back_to_initialize(
    session: IPCSession, start_bridge: StartBridge
) -> None:
    bridge = await start_bridge(session)
    probe: dict[str, object] = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    response = await bridge.request("server-discover-probe-1", "server/discover", probe)
    assert response == {
        "jsonrpc": "2.0",
        "id": "server-discover-probe-1",
        "error": {"code": -32601, "message": "Method not found: server/discover"},
    }
    assert "result" in await bridge.initialize()


async def test_ping_unknown_methods_and_notifications(bridge: StdioMcpClient) -> None:
    assert (await bridge.request(1, "ping"))["result"] == {}
    unknown = await bridge.request(2, "resources/list")
    assert unknown["error"] == {"code": -32601, "message": "Method not found: resources/list"}
    await bridge.notify("notifications/whatever", {"x": 1})
    await bridge.notify("notifications/cancelled", {"requestId": 999})
    assert (await bridge.request(3, "ping"))["result"] == {}
    assert bridge.unsolicited.empty(), "notifications are never answered"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"{not json\n", {"code": -32700, "message": "Parse error"}),
        (b"\xff\xfe\n", {"code": -32700, "message": "Parse error"}),
        (b"[1, 2]\n", {"code": -32600, "message": "Invalid Request: expected a JSON object"}),
        (b'{"jsonrpc": "2.0", "id": 5}\n', {"code": -32600, "message": "Invalid Request: no method"}),
        (
            b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}\n',
            {"code": -32600, "message": "Invalid Request: bad id"},
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}\n',
            {"code": -32600, "message": "Invalid Request: bad id"},
        ),
    ],
)
async def test_malformed_json_rpc_gets_json_rpc_errors(
    bridge: StdioMcpClient, line: bytes, error: dict[str, object]
) -> None:
    await bridge.send_raw(line)
    answer = await asyncio.wait_for(bridge.unsolicited.get(), 10)
    assert answer["error"] == error
    assert (await bridge.request("after", "ping"))["result"] == {}, "the bridge goes on"


async def test_responses_from_the_client_and_blank_lines_are_ignored(bridge: StdioMcpClient) -> None:
    await bridge.send_raw(b'\n  \n{"jsonrpc": "2.0", "id": 77, "result": {}}\n')
    assert (await bridge.request(1, "ping"))["result"] == {}
    assert bridge.unsolicited.empty()


async def test_invalid_tools_call_params(bridge: StdioMcpClient) -> None:
    no_name = await bridge.request(1, "tools/call", {"arguments": {}})
    assert no_name["error"]["code"] == -32602
    bad_arguments = await bridge.request(2, "tools/call", {"name": "echo", "arguments": [1]})
    assert bad_arguments["error"]["code"] == -32602


async def test_tools_list_comes_from_the_schema_file(bridge: StdioMcpClient, toolbox: Toolbox) -> None:
    response = await bridge.request(1, "tools/list", {})
    tools = response["result"]["tools"]
    assert [tool["name"] for tool in tools] == [schema["name"] for schema in toolbox.schemas]
    assert tools[0] == {
        "name": "echo",
        "description": "Returns its text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    }


async def test_tools_list_works_before_the_socket_is_reachable(session: IPCSession, start_bridge: StartBridge) -> None:
    args = [str(session.directory / "missing.sock"), str(session.schema_path)]
    bridge = await start_bridge(session, args=args)
    await bridge.initialize()
    response = await bridge.request(1, "tools/list")
    assert len(response["result"]["tools"]) == 6


# --- tool calls ---------------------------------------------------------------------------------------------


async def test_tools_call_returns_the_exact_text(bridge: StdioMcpClient, session: IPCSession) -> None:
    text = 'first line\nsecond: "quoted" ünïcödé 🎉 {"json": true}'
    assert await bridge.call(1, "echo", {"text": text}) == text_result(text)
    assert session.calls_completed == 1, "the call ran in the parent, over the socket"


async def test_tools_call_without_arguments(bridge: StdioMcpClient, toolbox: Toolbox) -> None:
    response = await bridge.request(1, "tools/call", {"name": "whoami"})
    assert response["result"] == text_result("tool_use_id=None")


async def test_tool_error_text_is_not_masked(bridge: StdioMcpClient) -> None:
    result = await bridge.call(1, "fail", {"why": "the disk is on fire"})
    assert result == text_result("the tool failed: the disk is on fire", is_error=True)


async def test_unknown_tool_is_an_error_result(bridge: StdioMcpClient) -> None:
    assert await bridge.call(1, "nope", {}) == text_result("Tool 'nope' not found", is_error=True)


async def test_meta_reaches_the_handler(bridge: StdioMcpClient, toolbox: Toolbox) -> None:
    meta = {"claudecode/toolUseId": "toolu_01ABC", "progressToken": 3}
    result = await bridge.call("x", "whoami", {}, _meta=meta)
    assert result == text_result("tool_use_id=toolu_01ABC")
    assert toolbox.metas == [meta]


async def test_oversized_result_is_an_error_result(bridge: StdioMcpClient) -> None:
    result = await bridge.call(1, "big", {"size": MAX_MESSAGE_SIZE})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "the result of tool 'big' is too large" in text
    assert "MAX_MESSAGE_SIZE" in text
    assert await bridge.call(2, "echo", {"text": "ok"}) == text_result("ok")


async def test_large_result_passes_intact(bridge: StdioMcpClient) -> None:
    result = await bridge.call(1, "big", {"size": 3_000_000})
    assert result == text_result("x" * 3_000_000)


async def test_twenty_concurrent_calls_are_routed_to_their_callers(bridge: StdioMcpClient) -> None:
    # "together" only returns once all 20 calls run at the same time in the parent.
    calls = [bridge.call(f"req-{n}", "together", {"n": n}) for n in range(20)]
    results = await asyncio.wait_for(asyncio.gather(*calls), 30)
    assert results == [text_result(f"call {n}") for n in range(20)]


async def test_cancelled_notification_cancels_the_tool(bridge: StdioMcpClient, toolbox: Toolbox) -> None:
    answer = bridge.expect(41)
    await bridge.send_raw(
        json.dumps(
            {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "block", "arguments": {}}}
        ).encode()
        + b"\n"
    )
    await asyncio.wait_for(toolbox.started.wait(), 10)
    await bridge.notify("notifications/cancelled", {"requestId": 41, "reason": "user interrupt"})
    await asyncio.wait_for(toolbox.cancelled.wait(), 10)
    assert await bridge.call(42, "echo", {"text": "next"}) == text_result("next")
    assert not answer.done(), "a cancelled request gets no answer"


# --- connection problems ------------------------------------------------------------------------------------


async def test_unreachable_socket_gives_an_ipc_connection_error_result(
    session: IPCSession, start_bridge: StartBridge
) -> None:
    missing = session.directory / "missing.sock"
    bridge = await start_bridge(session, args=[str(missing), str(session.schema_path)])
    await bridge.initialize()
    result = await bridge.call(1, "echo", {"text": "x"})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith(f"IPC connection failed: cannot connect to {missing}: No such file or directory")


async def test_wrong_secret_gives_an_error_result(
    session: IPCSession, start_bridge: StartBridge, light_package_root: Path
) -> None:
    env = {**bridge_env(session, light_package_root), SECRET_ENV_VAR: "not-the-secret"}
    bridge = await start_bridge(session, env=env)
    await bridge.initialize()
    result = await bridge.call(1, "echo", {"text": "x"})
    assert result == text_result(
        "IPC connection failed: the IPC server refused the bridge: authentication failed", is_error=True
    )
    assert session.calls_completed == 0


def test_a_refusal_still_unread_when_a_write_fails_is_the_reason_given() -> None:
    # The race behind a flaky "Broken pipe": the call queued behind the hello is written after the server refused
    # and closed; the refusal still waits in the socket and is what the bridge reports.
    ours, server = socket.socketpair()
    server.sendall(encode_message(error_response(None, "authentication failed", "IPCAuthenticationError")))
    server.close()
    ours.setblocking(False)
    with ours:
        connection = bridge_module._Connection(ours)
        assert bridge_module._refusal_in(connection) == "the IPC server refused the bridge: authentication failed"
        assert bridge_module._refusal_in(connection) is None  # nothing more to read


async def test_a_bridge_that_never_connected_retries_on_the_next_call(
    toolbox: Toolbox, start_bridge: StartBridge
) -> None:
    # The bridge starts before its session listens (never connected): a later call connects.
    async with toolbox.session() as session:
        socket_path = session.socket_path
        os.rename(socket_path, f"{socket_path}.away")
        bridge = await start_bridge(session)
        await bridge.initialize()
        failed = await bridge.call(1, "echo", {"text": "a"})
        assert failed["isError"] is True
        os.rename(f"{socket_path}.away", socket_path)
        assert await bridge.call(2, "echo", {"text": "b"}) == text_result("b")


# --- exiting ------------------------------------------------------------------------------------------------


async def test_bridge_exits_when_stdin_closes(bridge: StdioMcpClient) -> None:
    await bridge.close_stdin()
    assert await bridge.wait_exit() == 0
    assert await bridge.stderr_text() == ""


async def test_bridge_exits_when_the_session_stops(toolbox: Toolbox, start_bridge: StartBridge) -> None:
    session = toolbox.session()
    await session.start()
    bridge = await start_bridge(session)
    await bridge.initialize()
    assert await bridge.call(1, "echo", {"text": "connected"}) == text_result("connected")
    await session.stop()
    assert await bridge.wait_exit() == 0
    assert "cannot be re-established" in await bridge.stderr_text()


async def test_bridge_fails_calls_in_flight_when_the_session_stops(toolbox: Toolbox, start_bridge: StartBridge) -> None:
    session = toolbox.session()
    await session.start()
    bridge = await start_bridge(session)
    await bridge.initialize()
    pending = asyncio.create_task(bridge.call(1, "block", {}))
    await asyncio.wait_for(toolbox.started.wait(), 10)
    await session.stop()
    result = await asyncio.wait_for(pending, 10)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("IPC connection failed: ")
    assert await bridge.wait_exit() == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_signals_end_the_bridge_quietly(bridge: StdioMcpClient, signum: int) -> None:
    bridge.process.send_signal(signum)
    assert await bridge.wait_exit() == 0
    assert await bridge.stderr_text() == ""


ORPHANING_PARENT = """
import subprocess, sys, time
command = [sys.executable, "-m", "claudecode_model.ipc.bridge", *sys.argv[1:]]
child = subprocess.Popen(command, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(60)
"""


async def test_bridge_exits_when_its_parent_dies(
    session: IPCSession, light_package_root: Path, start_bridge: StartBridge
) -> None:
    # The bridge inherits the intermediate parent's stdin (our pipe, kept open), so only the parent's death
    # can end it.
    parent = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ORPHANING_PARENT,
        str(session.socket_path),
        str(session.schema_path),
        env=bridge_env(session, light_package_root),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert parent.stdout is not None
    try:
        bridge_pid = int(await asyncio.wait_for(parent.stdout.readline(), 30))
        assert await asyncio.to_thread(wait_until, lambda: session.connection_count == 1, 30)
        parent.kill()
        await parent.wait()

        def bridge_gone() -> bool:
            try:
                with open(f"/proc/{bridge_pid}/stat") as stat_file:
                    return stat_file.read().rsplit(")", 1)[1].split()[0] == "Z"
            except FileNotFoundError:
                return True

        assert await asyncio.to_thread(wait_until, bridge_gone, 10)
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
        assert parent.stdin is not None
        parent.stdin.close()


# --- start-up -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env_change", "message"),
    [
        ([], {}, "usage: python -m claudecode_model.ipc.bridge"),
        (None, {SECRET_ENV_VAR: ""}, f"{SECRET_ENV_VAR} is not set"),
        ("bad-schema", {}, "cannot load the tool schemas"),
        ("missing-schema", {}, "No such file or directory"),
    ],
)
async def test_wrong_start_exits_with_status_2(
    session: IPCSession,
    start_bridge: StartBridge,
    light_package_root: Path,
    tmp_path: Path,
    args: list[str] | str | None,
    env_change: dict[str, str],
    message: str,
) -> None:
    if args == "bad-schema":
        schema = tmp_path / "schema.json"
        schema.write_text(json.dumps([{"name": "x"}]))
        args = [str(session.socket_path), str(schema)]
    elif args == "missing-schema":
        args = [str(session.socket_path), str(tmp_path / "nothing.json")]
    env = {**bridge_env(session, light_package_root), **env_change}
    bridge = await start_bridge(session, args=args, env=env)
    assert await bridge.wait_exit() == 2
    assert message in await bridge.stderr_text()


IMPORT_PROBE = [sys.executable, "-X", "importtime", "-m", "claudecode_model.ipc.bridge"]


async def test_bridge_imports_only_the_standard_library_and_its_own_modules(
    session: IPCSession, light_package_root: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        *IMPORT_PROBE,
        str(session.socket_path),
        str(session.schema_path),
        env=bridge_env(session, light_package_root),
        stdin=subprocess.DEVNULL,  # EOF at once: the bridge starts, imports everything, and exits
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0
    imported = {line.split("|")[-1].strip() for line in stderr.decode().splitlines() if line.startswith("import time:")}
    ours = {name for name in imported if name.startswith("claudecode_model")}
    assert ours == {
        "claudecode_model",
        "claudecode_model.ipc",
        "claudecode_model.ipc._constants",
        "claudecode_model.ipc._framing",
        "claudecode_model._lazy",
        "claudecode_model.ipc._protocol",
    }, "the bridge module itself runs as __main__"
    heavy = {name for name in imported if name.split(".")[0] in HEAVY_MODULES}
    assert heavy == set()
    assert "claudecode_model.exceptions" not in imported


async def test_bridge_from_the_real_package_config(toolbox: Toolbox, start_bridge: StartBridge) -> None:
    # Exactly what stdio_server_config() tells the CLI to run, without the light root.
    async with toolbox.session() as session:
        bridge = await start_bridge(session, light=False)
        await bridge.initialize()
        assert await bridge.call(1, "echo", {"text": "real"}) == text_result("real")
        await bridge.close_stdin()
        assert await bridge.wait_exit(30) == 0
