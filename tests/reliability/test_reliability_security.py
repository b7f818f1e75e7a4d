"""Security of a live run with tools over the IPC bridge (``transport="stdio"``): private files, the socket
closed to other users and to connections without the session secret, and no secret in command lines, logs or
error messages.

tests/ipc/test_ipc_session.py checks a bare ``IPCSession`` (modes, a wrong or missing secret, a peer of
another uid once the modes are loosened); these tests check the session a ``ClaudeCodeModel`` run really
creates, while the CLI and the bridge are running.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.function import FunctionModel

from claudecode_model import (
    ClaudeCodeAuthenticationError,
    ClaudeCodeModel,
    CLIProcessError,
    CLITimeoutError,
)
from claudecode_model.ipc import SECRET_ENV_VAR
from claudecode_model.ipc._framing import decode_message, encode_message
from claudecode_model.ipc._protocol import hello_request
from claudecode_model.ipc._streams import read_frame
from claudecode_model.testing import Failure
from tests._support.polling import wait_for
from tests._support.processes import cli_children, cmdline, environ, live_descendants
from tests._support.reliability import brain

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

API_KEY = "sk-ant-reliability-api-key-7f3a9c"
AUTH_TOKEN = "reliability-auth-token-4e1d77"
TAVILY_KEY = "tvly-reliability-key-2b8e51"
DEPS_SECRET = "deps-secret-value-9c04aa"
BRIDGE_MODULE = "claudecode_model.ipc.bridge"
NEEDS_SETPRIV = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to act as another user"
)


@dataclass
class Deps:
    api_key: str


@dataclass
class LiveRun:
    """A run whose tool call (over the IPC bridge) is blocked until ``release()``; what it consists of."""

    task: asyncio.Task[Any]
    cli: int
    bridge: int
    directory: Path
    socket: Path
    schema: Path
    secret: str
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def finish(self) -> str:
        self.release.set()
        result = await asyncio.wait_for(self.task, 60)
        return str(result.output)


def _ipc_files(directory: Path) -> tuple[Path, Path]:
    """The socket and the schema file in a session directory."""
    [socket_path] = directory.glob("*.sock")
    [schema] = directory.glob("*.json")
    return socket_path, schema


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")


def _secret_env(backend: OfflineBackend) -> dict[str, str]:
    return {**backend.cli_env(), "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_AUTH_TOKEN": AUTH_TOKEN}


def _model(backend: OfflineBackend) -> ClaudeCodeModel:
    backend.set_brain(FunctionModel(brain))
    return ClaudeCodeModel(env=_secret_env(backend), tool_transport="stdio", tool_execution="cli")


@pytest.fixture
async def model(claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ClaudeCodeModel]:
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    model = _model(claude_backend)
    try:
        yield model
    finally:
        await model.aclose()


async def _start_live_run(model: ClaudeCodeModel) -> LiveRun:
    """Start a run whose tool waits; return once the CLI, the bridge and the IPC files exist."""
    agent = Agent(model, deps_type=Deps)
    entered = asyncio.Event()
    release = asyncio.Event()

    @agent.tool
    async def hold(ctx: RunContext[Deps]) -> str:
        entered.set()
        await release.wait()
        return "released"

    before = set(os.listdir(tempfile.gettempdir()))
    task = asyncio.create_task(agent.run("call hold", deps=Deps(DEPS_SECRET)))
    await asyncio.wait_for(entered.wait(), 60)
    [cli] = cli_children()
    [bridge] = [pid for pid in live_descendants(cli) if BRIDGE_MODULE in cmdline(pid)]
    [name] = [n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("claudecode_ipc_")]
    directory = Path(tempfile.gettempdir(), name)
    socket_path, schema = _ipc_files(directory)
    secret = environ(cli)[SECRET_ENV_VAR]
    return LiveRun(task, cli, bridge, directory, socket_path, schema, secret, release)


@pytest.fixture
async def live(model: ClaudeCodeModel) -> AsyncIterator[LiveRun]:
    run = await _start_live_run(model)
    try:
        yield run
    finally:
        run.release.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run.task, 60)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# --- files and sockets --------------------------------------------------------------------------------------


async def test_live_ipc_files_are_private_and_removed_afterwards(live: LiveRun, model: ClaudeCodeModel) -> None:
    assert _mode(live.directory) == 0o700
    assert _mode(live.socket) == 0o600
    assert stat.S_ISSOCK(live.socket.lstat().st_mode)
    assert _mode(live.schema) == 0o600
    for path in (live.directory, live.socket, live.schema):
        assert path.lstat().st_uid == os.geteuid()

    assert await live.finish() == "done: released"
    await model.aclose()
    assert not live.directory.exists()


OTHER_USER_PROBE = """
import json, os, socket, struct, sys
report = {"uid": os.getuid()}
try:
    with open(f"/proc/{sys.argv[2]}/environ", "rb") as environ:
        report["environ"] = len(environ.read())
except OSError as exc:
    report["environ"] = type(exc).__name__
sock = socket.socket(socket.AF_UNIX)
try:
    sock.connect(sys.argv[1])
except OSError as exc:
    report["connect"] = type(exc).__name__
else:
    report["connect"] = "connected"
    body = json.dumps({"id": 0, "method": "hello", "params": {"secret": sys.argv[3]}}).encode()
    try:
        sock.sendall(struct.pack(">I", len(body)) + body)
        report["received"] = len(sock.recv(65536))
    except OSError as exc:
        report["received"] = type(exc).__name__
print(json.dumps(report))
"""


async def _probe_as_nobody(live: LiveRun) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        *("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-I", "-S", "-c"),
        OTHER_USER_PROBE,
        str(live.socket),
        str(live.cli),
        live.secret,  # even a user who somehow knew the secret
        env={},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    return dict(json.loads(stdout))


@NEEDS_SETPRIV
async def test_another_user_can_neither_reach_the_socket_nor_read_the_secret(
    live: LiveRun, caplog: pytest.LogCaptureFixture
) -> None:
    report = await _probe_as_nobody(live)

    assert report["uid"] == 65534
    assert report["connect"] == "PermissionError", "the 0700 directory keeps other users away from the socket"
    assert report["environ"] == "PermissionError", "the CLI's environment (with the secret) is private"

    # Defence in depth: with the modes loosened, the peer-credential check still refuses that user.
    os.chmod(live.directory, 0o711)
    os.chmod(live.socket, 0o666)
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        loosened = await _probe_as_nobody(live)
    os.chmod(live.directory, 0o700)
    os.chmod(live.socket, 0o600)

    assert loosened["connect"] == "connected"
    # Closed without a single byte of answer (possibly before the hello was even written).
    assert loosened["received"] in (0, "BrokenPipeError", "ConnectionResetError")
    assert "uid 65534 is not our uid" in caplog.text
    assert await live.finish() == "done: released", "the run is undisturbed"


async def _raw_exchange(socket_path: Path, first_frame: bytes) -> list[dict[str, object]]:
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        writer.write(first_frame)
        writer.write(encode_message({"id": 1, "method": "call_tool", "params": {"name": "hold", "arguments": {}}}))
        await writer.drain()
        answers = []
        async with asyncio.timeout(30):
            while (body := await read_frame(reader)) is not None:
                answers.append(decode_message(body))
        return answers
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@pytest.mark.parametrize(
    "first_frame",
    [
        pytest.param(encode_message(hello_request("0" * 64)), id="wrong-secret"),
        pytest.param(encode_message({"id": 0, "method": "hello", "params": {}}), id="no-secret"),
        pytest.param(b"", id="no-hello"),
    ],
)
async def test_a_connection_without_the_session_secret_is_refused(
    first_frame: bytes, live: LiveRun, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        answers = await _raw_exchange(live.socket, first_frame)

    assert answers == [{"id": None, "error": {"message": "authentication failed", "type": "IPCAuthenticationError"}}]
    assert "missing or wrong session secret" in caplog.text
    assert await live.finish() == "done: released", "the tool ran once, for the CLI only"


# --- secrets ------------------------------------------------------------------------------------------------


async def test_no_secret_on_the_command_lines(live: LiveRun) -> None:
    # Positive control: these are the secrets the processes really hold, in their private environment.
    assert environ(live.cli)["ANTHROPIC_API_KEY"] == API_KEY
    assert environ(live.bridge)[SECRET_ENV_VAR] == live.secret
    # ... and the bridge's server config reaches the CLI, from the private file its command line names.
    argv = cmdline(live.cli)
    [config_file] = [
        Path(value) for flag, value in itertools.pairwise(argv) if flag == "--mcp-config" and value[0] != "{"
    ]
    assert BRIDGE_MODULE in config_file.read_text()
    assert BRIDGE_MODULE not in _command_line(live.cli)
    secrets = [live.secret, API_KEY, AUTH_TOKEN, TAVILY_KEY, DEPS_SECRET]

    for pid in (live.cli, live.bridge):
        command_line = _command_line(pid)
        assert command_line
        leaked = [secret for secret in secrets if secret in command_line]
        assert not leaked, f"secrets on the command line of {cmdline(pid)[0]}: {leaked}"
    assert await live.finish() == "done: released"


def _error_texts(error: BaseException) -> list[str]:
    """Everything an error shows: its text, repr, attributes, and those of its causes."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), repr(vars(current))]
        current = current.__cause__ or current.__context__
    return texts


async def test_no_secret_in_logs_or_errors_of_failing_runs(
    model: ClaudeCodeModel, claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture
) -> None:
    from claudecode_model.tavily import TavilySearchDeps, create_research_agent
    from claudecode_model.tavily.testing import FakeTavilyServer

    caplog.set_level(logging.DEBUG)
    texts: list[str] = []

    # 1. A tool that fails, over the bridge, with secret deps; the IPC secret read from the live CLI.
    live = await _start_live_run(model)
    ipc_secret = live.secret
    agent = Agent(model, deps_type=Deps)

    @agent.tool
    def explode(ctx: RunContext[Deps]) -> str:
        raise RuntimeError("the vault is locked")

    assert await live.finish() == "done: released"
    assert (await agent.run("call explode", deps=Deps(DEPS_SECRET))).output == "done: the vault is locked"

    # 2. The API refuses the credentials.
    claude_backend.fail_next(Failure.http(401, "invalid x-api-key"))
    with pytest.raises(ClaudeCodeAuthenticationError) as refused:
        await agent.run("hello", deps=Deps(DEPS_SECRET))
    texts += _error_texts(refused.value)

    # 3. A timeout while the API stalls.
    claude_backend.fail_next(Failure.stall())
    with pytest.raises(CLITimeoutError) as timed_out:
        await agent.run("hello", deps=Deps(DEPS_SECRET), model_settings={"timeout": 2})
    texts += _error_texts(timed_out.value)

    # 4. The CLI is killed mid-run.
    claude_backend.fail_next(Failure.stall())
    clis_before, requests_before = set(cli_children()), len(claude_backend.requests)
    task = asyncio.create_task(agent.run("hello", deps=Deps(DEPS_SECRET)))
    assert await wait_for(lambda: len(claude_backend.requests) > requests_before)
    [cli] = set(cli_children()) - clis_before
    os.kill(cli, signal.SIGKILL)
    with pytest.raises(CLIProcessError) as killed:
        await task
    texts += _error_texts(killed.value)

    # 5. Tavily refuses the key (its tools run in this process, reached over the bridge).
    with FakeTavilyServer(api_key="the-key-tavily-expects") as tavily:
        research = create_research_agent(model, deps=TavilySearchDeps(api_key=TAVILY_KEY, api_base_url=tavily.base_url))
        claude_backend.set_brain(FunctionModel(brain))
        answer = await research.run('call tavily_search {"query": "reliability"}')
    assert answer.output.startswith("done: ")
    assert "401" in answer.output or "authentication" in answer.output.lower()

    await model.aclose()
    secrets = {"IPC secret": ipc_secret, "API key": API_KEY, "auth token": AUTH_TOKEN, "Tavily key": TAVILY_KEY}
    secrets["deps"] = DEPS_SECRET
    sent_to_claude = [str(request.raw) for request in claude_backend.requests]
    places = {"log records": caplog.text, "error messages": "\n".join(texts), "API requests": "\n".join(sent_to_claude)}
    assert caplog.records, "DEBUG logging was captured"
    leaks = [
        f"{name} in {place}" for name, secret in secrets.items() for place, text in places.items() if secret in text
    ]
    assert not leaks
