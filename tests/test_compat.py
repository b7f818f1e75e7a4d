"""Every private pydantic-ai / claude-agent-sdk name this package reaches, exercised through ``_compat``.

An upgrade of either library that moves, renames or reshapes one of them fails here, naming the function.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, PartStartEvent, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from claudecode_model import _compat
from claudecode_model._process.binary import find_cli
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

    def respond(messages: list[object], info: AgentInfo) -> object:
        from pydantic_ai.messages import ModelResponse

        seen.append(_compat.current_run_context())
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(respond), deps_type=int).run_sync("hi", deps=7)  # type: ignore[arg-type]
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


@pytest.mark.cli
async def test_cli_process_is_the_running_cli(claude_backend: OfflineBackend) -> None:
    options = ClaudeAgentOptions(cli_path=find_cli(), env=claude_backend.cli_env(), allowed_tools=[])
    client = ClaudeSDKClient(options)
    assert _compat.cli_process(client) is None
    await client.connect()
    try:
        process = _compat.cli_process(client)
        assert process is not None
        assert process.returncode is None
        os.kill(process.pid, 0)  # alive, and ours
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert process.returncode is not None


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
    assert _compat.api_error_fields(message) == {
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "api_error_code": "credits_required",
        "request_id": "req_1",
    }
    plain = message_parser.parse_message({**raw, "is_api_error_message": False})
    assert _compat.api_error_fields(plain) == {}


@pytest.mark.cli
async def test_close_process_pipes_closes_what_the_sdk_left_open(claude_backend: OfflineBackend) -> None:
    options = ClaudeAgentOptions(cli_path=find_cli(), env=claude_backend.cli_env(), allowed_tools=[])
    client = ClaudeSDKClient(options)
    await client.connect()
    process = _compat.cli_process(client)
    assert process is not None
    transport = process._process._transport  # type: ignore[attr-defined]  # what close_process_pipes reaches
    stdout = transport.get_pipe_transport(1)
    try:
        _compat.close_process_pipes(process)  # a running CLI is killed with its pipes closed
        assert stdout.is_closing()
    finally:
        await asyncio.wait_for(client.disconnect(), timeout=10)
    assert process.returncode is not None


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

    from pydantic_ai.messages import ModelMessage, ModelResponse
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


def test_sdk_cli_command_is_the_command_line_of_the_sdks_transport() -> None:
    command = _compat.sdk_cli_command(ClaudeAgentOptions(cli_path="/bin/claude", model="m", allowed_tools=["Read"]))

    assert command[0] == "/bin/claude"
    assert command[command.index("--model") + 1] == "m"
    assert command[command.index("--allowedTools") + 1] == "Read"
    assert command[-2:] == ["--input-format", "stream-json"]


async def test_adopted_spawns_get_the_process_the_finder_returns() -> None:
    """``adopt_cli_spawns`` replaces the ``open_process`` the SDK's transport calls: the finder's process is used,
    ``None`` starts one as before."""
    import anyio
    from claude_agent_sdk._internal.transport import subprocess_cli

    asked: list[list[str]] = []
    mine = await anyio.open_process(["true"])

    async def finder(command: Sequence[str], keywords: Mapping[str, Any]) -> Any:
        asked.append(list(command))
        return mine if command[0] == "mine" else None

    previous = vars(subprocess_cli)["anyio"]
    _compat.adopt_cli_spawns(finder)
    try:
        open_process = subprocess_cli.anyio.open_process
        assert await open_process(["mine"], stdin=None) is mine
        started = await open_process(["true"])
        await started.wait()
        assert started is not mine
        assert started.returncode == 0
        assert subprocess_cli.anyio.Lock is anyio.Lock  # everything else is anyio's own
    finally:
        vars(subprocess_cli)["anyio"] = previous
        await mine.wait()
        await mine.aclose()
        await started.aclose()
    assert asked == [["mine"], ["true"]]


async def test_spawned_clis_get_the_extra_keywords_and_finders_see_the_sdks_own() -> None:
    """``spawn_clis_with`` adds keywords to the SDK transport's ``open_process`` (a session of its own); a finder is
    still asked with the SDK's keywords alone."""
    from claude_agent_sdk._internal.transport import subprocess_cli

    seen: list[dict[str, Any]] = []

    async def finder(command: Sequence[str], keywords: Mapping[str, Any]) -> Any:
        seen.append(dict(keywords))
        return None

    previous = vars(subprocess_cli)["anyio"]
    _compat.adopt_cli_spawns(finder)
    _compat.spawn_clis_with({"start_new_session": True})
    try:
        started = await subprocess_cli.anyio.open_process(["sleep", "5"], stdin=None)
        try:
            assert os.getsid(started.pid) == started.pid
        finally:
            started.kill()
            await started.wait()
            await started.aclose()
    finally:
        _compat.spawn_clis_with({})
        vars(subprocess_cli)["anyio"] = previous
    assert seen == [{"stdin": None}]
