"""Every private pydantic-ai / claude-agent-sdk name this package reaches, exercised through ``_compat``.

An upgrade of either library that moves, renames or reshapes one of them fails here, naming the function.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from subprocess import PIPE
from typing import Any, cast
from unittest.mock import patch

import anyio
import pytest
from anyio.abc import Process
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
from claude_agent_sdk.types import SessionStoreEntry
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartStartEvent,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from claudecode_model import _compat
from claudecode_model._process.binary import find_cli
from claudecode_model._sessions.options import INLINE_OUTPUT_SCHEMA_CHARACTERS
from claudecode_model.testing import OfflineBackend

SRC = Path(_compat.__file__).parent


def test_now_utc_is_an_aware_datetime() -> None:
    assert _compat.now_utc().tzinfo is not None


def test_request_instructions_joins_the_instructions_of_the_last_request() -> None:
    messages = [ModelRequest(parts=[UserPromptPart("hi")], instructions="Be brief.")]
    assert _compat.request_instructions(messages, ModelRequestParameters()) == "Be brief."
    assert _compat.request_instructions([ModelRequest(parts=[UserPromptPart("hi")])], ModelRequestParameters()) is None


def test_parts_manager_builds_parts_from_deltas() -> None:
    parts = _compat.new_parts_manager(ModelRequestParameters())
    events = list(parts.handle_text_delta(vendor_part_id="a", content="hel"))
    events += list(parts.handle_text_delta(vendor_part_id="a", content="lo"))
    assert isinstance(events[0], PartStartEvent)
    assert parts.get_parts() == [TextPart("hello")]
    assert parts.get_part_by_vendor_id("a") == TextPart("hello")
    assert isinstance(parts, _compat.ModelResponsePartsManager)


@pytest.mark.usefixtures("run_sync_loop")
def test_current_run_context_is_the_agent_runs_own() -> None:
    assert _compat.current_run_context() is None
    seen: list[object] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_compat.current_run_context())
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(respond), deps_type=int).run_sync("hi", deps=7)
    assert isinstance(seen[0], RunContext)
    assert seen[0].deps == 7


def test_bundled_cli_version_matches_the_bundled_binary() -> None:
    version = _compat.bundled_cli_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", version)
    bundled = _compat.bundled_cli_dir() / "claude"
    assert bundled.is_file()
    assert find_cli() == bundled


def test_session_transcript_path_follows_the_sdk_layout(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    path = _compat.session_transcript_path("abc", env=env, cwd="/some/project dir")
    assert path == tmp_path / "projects" / "-some-project-dir" / "abc.jsonl"


async def _spawn_with_anyio(command: Sequence[str], keywords: Mapping[str, Any]) -> Any:
    import anyio

    return await anyio.open_process(list(command), **keywords)


@pytest.mark.cli
async def test_transport_process_is_the_running_cli(claude_backend: OfflineBackend) -> None:
    options = ClaudeAgentOptions(cli_path=find_cli(), env=claude_backend.cli_env(), allowed_tools=[])
    transport = _compat.subprocess_transport(
        options, _spawn_with_anyio, inline_schema_limit=INLINE_OUTPUT_SCHEMA_CHARACTERS
    )
    client = ClaudeSDKClient(options, transport=transport)
    assert _compat.transport_process(transport) is None
    assert _compat.transport_process(object()) is None
    await client.connect()
    try:
        process = _compat.transport_process(transport)
        assert process is not None
        assert process.returncode is None
        os.kill(process.pid, 0)  # alive, and ours
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert process.returncode is not None


@pytest.mark.cli
async def test_subprocess_transport_starts_the_sdks_command_line_through_spawn(claude_backend: OfflineBackend) -> None:
    """The SDK's own ``connect()`` builds the command line and environment; ``spawn`` starts the process with them
    (with ``can_use_tool`` routed over stdio as the client routes it), and the SDK's module is left as it was."""
    from claude_agent_sdk import PermissionResultAllow
    from claude_agent_sdk._internal.transport import subprocess_cli

    async def allow(*args: Any) -> PermissionResultAllow:
        return PermissionResultAllow()

    anyio_before = vars(subprocess_cli)["anyio"]
    options = ClaudeAgentOptions(
        cli_path=find_cli(), env={**claude_backend.cli_env(), "PROBE": "1"}, allowed_tools=[], can_use_tool=allow
    )
    asked: list[tuple[list[str], dict[str, Any]]] = []

    async def spawn(command: Sequence[str], keywords: Mapping[str, Any]) -> Any:
        asked.append((list(command), dict(keywords)))
        return await _spawn_with_anyio(command, keywords)

    transport = _compat.subprocess_transport(options, spawn, inline_schema_limit=INLINE_OUTPUT_SCHEMA_CHARACTERS)
    client = ClaudeSDKClient(options, transport=transport)
    await client.connect()
    try:
        [(command, keywords)] = asked
        assert command == _compat.sdk_cli_command(replace(options, permission_prompt_tool_name="stdio"))
        assert command[command.index("--permission-prompt-tool") + 1] == "stdio"
        assert keywords["env"]["PROBE"] == "1"
        assert keywords["env"]["CLAUDE_AGENT_SDK_VERSION"] == _compat.sdk_version()
        assert set(keywords) == {"stdin", "stdout", "stderr", "cwd", "env", "user"}
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert vars(subprocess_cli)["anyio"] is anyio_before
    _compat.load_sdk()  # idempotent


async def test_options_resumed_from_store_write_the_stores_session_to_a_private_folder(tmp_path: Path) -> None:
    import uuid

    from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

    plain = ClaudeAgentOptions(cli_path=find_cli())
    options, remove = await _compat.options_resumed_from_store(plain)
    assert options is plain
    await remove()

    store = InMemorySessionStore()
    session = str(uuid.uuid4())
    cwd = str(tmp_path)

    # A transcript line carries more keys than the SDK's minimal SessionStoreEntry names.
    line = {"type": "user", "uuid": str(uuid.uuid4()), "sessionId": session, "message": {"role": "user"}}
    entry = cast("SessionStoreEntry", line)
    await store.append({"project_key": project_key_for_directory(cwd), "session_id": session}, [entry])
    stored = ClaudeAgentOptions(cli_path=find_cli(), cwd=cwd, resume=session, session_store=store)
    options, remove = await _compat.options_resumed_from_store(stored)
    config_dir = Path(options.env["CLAUDE_CONFIG_DIR"])
    assert options.resume == session
    assert _holds(config_dir, f"{session}.jsonl")
    await remove()
    assert not _holds(config_dir, "*")


def _holds(folder: Path, pattern: str) -> bool:
    return any(path.is_file() for path in folder.rglob(pattern))


def test_api_error_fields_are_kept_by_the_sdks_parser() -> None:
    from claude_agent_sdk._internal import message_parser

    _compat.keep_api_error_fields()
    _compat.keep_api_error_fields()  # installed once
    raw = {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": "API Error"}], "model": "<synthetic>"},
        "parent_tool_use_id": None,
        "error": "rate_limit",
        "is_api_error_message": True,
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "api_error_code": "credits_required",
        "request_id": "req_1",
    }
    message = message_parser.parse_message(raw)
    assert isinstance(message, AssistantMessage)
    assert _compat.api_error_fields(message) == {
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "api_error_code": "credits_required",
        "request_id": "req_1",
    }
    plain = message_parser.parse_message({**raw, "is_api_error_message": False})
    assert isinstance(plain, AssistantMessage)
    assert _compat.api_error_fields(plain) == {}


@pytest.mark.cli
async def test_close_process_pipes_closes_what_the_sdk_left_open(claude_backend: OfflineBackend) -> None:
    options = ClaudeAgentOptions(cli_path=find_cli(), env=claude_backend.cli_env(), allowed_tools=[])
    sdk_transport = _compat.subprocess_transport(
        options, _spawn_with_anyio, inline_schema_limit=INLINE_OUTPUT_SCHEMA_CHARACTERS
    )
    client = ClaudeSDKClient(options, transport=sdk_transport)
    await client.connect()
    process = _compat.transport_process(sdk_transport)
    assert process is not None
    transport = process._process._transport  # type: ignore[attr-defined]  # what close_process_pipes reaches
    stdout = transport.get_pipe_transport(1)
    try:
        _compat.close_process_pipes(process)  # a running CLI is killed with its pipes closed
        assert stdout.is_closing()
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert process.returncode is not None


@pytest.mark.cli
async def test_a_control_request_and_an_sdk_server_added_after_connect_claim_a_parked_cli(
    claude_backend: OfflineBackend, tmp_path: Path
) -> None:
    """The claim of a parked CLI (``--await-claim``): ``claim_session`` (a request the client has no method for)
    gets the CLI's answer, and a server the client did not connect with serves the claimed session's tool call."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("echo", "Echo a text.", {"text": str})
    async def echo(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"echo {args['text']}"}]}

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.function_tools and len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("mcp__added__echo", {"text": "hi"})])
        return ModelResponse(parts=[TextPart("done")])

    claude_backend.set_brain(FunctionModel(brain))
    options = ClaudeAgentOptions(
        cli_path=find_cli(),
        env=claude_backend.cli_env(),
        setting_sources=[],
        tools=[],
        allowed_tools=["mcp__added"],
        extra_args={"await-claim": None},
    )
    client = ClaudeSDKClient(options)
    with pytest.raises(RuntimeError, match="not connected"):
        await _compat.send_control_request(client, {"subtype": "mcp_status"}, seconds=10)
    await client.connect()
    try:
        instance = create_sdk_mcp_server("added", tools=[echo])["instance"]
        _compat.add_sdk_mcp_server(client, "added", instance)
        bridge = client._query._sdk_mcp_bridges["added"]  # type: ignore[union-attr]
        _compat.add_sdk_mcp_server(client, "added", instance)  # already answered for: left as it is
        assert client._query._sdk_mcp_bridges["added"] is bridge  # type: ignore[union-attr]
        claim = {"subtype": "claim_session", "cwd": str(tmp_path), "sdk_mcp_servers": ["added"]}
        answer = await _compat.send_control_request(client, claim, seconds=30)
        await client.query("go")
        async for _ in client.receive_response():
            pass
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert answer["status"] == "ok"
    assert [tool.name for tool in claude_backend.requests[0].tools] == ["mcp__added__echo"]
    [result] = claude_backend.requests[-1].tool_results()
    assert result.text == "echo hi"


async def test_process_stdin_fd_is_the_write_end_of_the_process_s_input() -> None:
    """What the lifeline hands its watcher a copy of (macOS): bytes written to it reach the process's input."""
    process = await anyio.open_process(["cat"], stdin=PIPE, stdout=PIPE)
    try:
        fd = _compat.process_stdin_fd(process)
        assert fd is not None
        os.write(fd, b"through the fd\n")
        assert process.stdout is not None
        assert await process.stdout.receive() == b"through the fd\n"
    finally:
        await process.aclose()
    without_input = await anyio.open_process(["true"], stdin=None, stdout=PIPE)
    try:
        assert _compat.process_stdin_fd(without_input) is None
    finally:
        await without_input.aclose()


def test_no_other_module_imports_a_private_third_party_name() -> None:
    offenders: list[str] = []
    for path in SRC.rglob("*.py"):
        if path.name == "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                top, *rest = name.split(".")
                if top in ("pydantic_ai", "claude_agent_sdk") and any(part.startswith("_") for part in rest):
                    offenders.append(f"{path.relative_to(SRC)}: {name}")
    assert offenders == []


def test_streamed_response_keeps_its_parts_in_the_overridden_parts_manager() -> None:
    # ClaudeCodeStreamedResponse overrides this attribute with the parts manager of its turn's translator.
    assert isinstance(inspect.getattr_static(StreamedResponse, "_parts_manager"), functools.cached_property)
    assert "self._parts_manager.get_parts()" in inspect.getsource(StreamedResponse.get)


@pytest.mark.usefixtures("run_sync_loop")
def test_an_agent_run_holds_the_models_run_scope_around_its_requests() -> None:
    """``ClaudeCodeModel`` overrides pydantic-ai's private ``Model._run_scope()`` hook to learn when a run ends (and
    settle the CLI turns it left waiting for tool results): the hook must still exist and wrap the run's requests."""
    import contextlib
    from collections.abc import AsyncIterator

    from pydantic_ai.models import Model

    assert callable(getattr(Model, "_run_scope", None))
    events: list[str] = []

    class ScopedModel(FunctionModel):
        @contextlib.asynccontextmanager
        async def _scoped(self) -> AsyncIterator[None]:
            events.append("enter")
            try:
                yield
            finally:
                events.append("exit")

        def _run_scope(self) -> contextlib.AbstractAsyncContextManager[None]:
            return self._scoped()

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        events.append("request")
        return ModelResponse(parts=[TextPart("ok")])

    result = Agent(ScopedModel(answer)).run_sync("hi")

    assert result.output == "ok"
    assert events == ["enter", "request", "exit"]


def test_the_sdk_versions_read_without_importing_it_are_the_sdks_own() -> None:
    import claude_agent_sdk
    from claude_agent_sdk._cli_version import __cli_version__

    assert (_compat.sdk_version(), _compat.bundled_cli_version()) == (claude_agent_sdk.__version__, __cli_version__)


def test_a_large_output_schema_leaves_the_command_line_and_a_small_one_stays() -> None:
    """The library's subprocess transport takes a schema longer than its limit off the command line
    (tests/platforms/test_large_arguments_cli.py: it reaches the CLI in the ``initialize`` request, which the CLI
    honours); the SDK's own command line is unchanged."""

    def command(schema: dict[str, object], limit: int | None = 100) -> list[str]:
        output_format = {"type": "json_schema", "schema": schema}
        options = ClaudeAgentOptions(cli_path="/bin/claude", output_format=output_format)
        return _compat.sdk_cli_command(options, inline_schema_limit=limit)

    small: dict[str, object] = {"type": "object"}
    large: dict[str, object] = {"type": "object", "description": "x" * 100}
    assert command(small)[command(small).index("--json-schema") + 1] == '{"type": "object"}'
    assert "--json-schema" not in command(large)
    assert "--json-schema" in command(large, limit=None)


async def test_a_large_output_schema_is_sent_in_the_initialize_request() -> None:
    """What the transport writes: the ``initialize`` control request gains ``jsonSchema``; other lines are as
    written."""
    schema = {"type": "object", "description": "x" * 100}
    options = ClaudeAgentOptions(cli_path="/bin/claude", output_format={"type": "json_schema", "schema": schema})
    transport = _compat.subprocess_transport(options, _never_spawned, inline_schema_limit=100)
    written: list[str] = []

    async def write(data: str) -> None:
        written.append(data)

    request: dict[str, object] = {"subtype": "initialize", "hooks": None}
    initialize = {"type": "control_request", "request_id": "r1", "request": request}
    user = {"type": "user", "message": {"role": "user", "content": "initialize"}}
    with patch.object(SubprocessCLITransport, "write", lambda self, data: write(data)):
        await transport.write(json.dumps(initialize) + "\n")
        await transport.write(json.dumps(user) + "\n")

    assert json.loads(written[0])["request"] == {**request, "jsonSchema": schema}
    assert written[0].endswith("\n")
    assert json.loads(written[1]) == user


async def _never_spawned(command: Sequence[str], keywords: Mapping[str, object]) -> Process:
    raise AssertionError("not started")


def test_sdk_cli_command_is_the_command_line_of_the_sdks_transport() -> None:
    command = _compat.sdk_cli_command(ClaudeAgentOptions(cli_path="/bin/claude", model="m", allowed_tools=["Read"]))

    assert command[0] == "/bin/claude"
    assert command[command.index("--model") + 1] == "m"
    assert command[command.index("--allowedTools") + 1] == "Read"
    assert command[-2:] == ["--input-format", "stream-json"]


def test_importing_the_package_changes_no_other_library() -> None:
    """Nothing is patched at import: the SDK's parser, its transport module's ``anyio`` and its loggers' filters
    are the same before and after every module of the package is imported (the parser change and the log filter
    come with the first session start)."""
    import subprocess
    import sys

    program = """
import importlib, logging, pkgutil
import claude_agent_sdk
from claude_agent_sdk._internal import message_parser
from claude_agent_sdk._internal.transport import subprocess_cli
def state():
    loggers = ("claude_agent_sdk._internal.query", "claude_agent_sdk")
    filters = [logging.getLogger(name).filters[:] for name in loggers]
    return message_parser.parse_message, vars(subprocess_cli)["anyio"], filters
before = state()
import claudecode_model
for module in pkgutil.walk_packages(claudecode_model.__path__, "claudecode_model."):
    if module.name.split(".")[1] not in ("temporal", "durable", "ui", "tavily", "cli"):
        importlib.import_module(module.name)
from claudecode_model._sessions import session
after = state()
assert before == after, (before, after)
print("unchanged")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "unchanged", done.stderr
