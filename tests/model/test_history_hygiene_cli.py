"""Odd text and the disk: lone surrogates, replayed transcripts, unwritable config dirs, ``"new"`` sessions.

End to end through the real Claude Code CLI and the offline backend.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeError, ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend
from tests._support.brains import tool_returns

pytestmark = pytest.mark.cli


ODD = "report-\udcff.txt"
"""A file name as ``os.fsdecode`` gives it for the undecodable byte 0xff: a lone surrogate."""

ON_THE_WIRE = "report-\ufffd.txt"
"""What the API receives for ``ODD``: a lone surrogate cannot be encoded as UTF-8; the CLI sends U+FFFD instead."""


def echo_or_call_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the offered tool once when asked to ``list``, then answers with its result; else echoes."""
    last = messages[-1]
    results = tool_returns(last)
    if results:
        return ModelResponse(parts=[TextPart(f"found: {results[-1].content}")])
    texts = [p.content for p in last.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
    prompt = texts[-1] if texts else ""
    if prompt == "list" and info.function_tools:
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])
    return ModelResponse(parts=[TextPart(f"echo: {prompt}")])


def user_texts_seen(backend: OfflineBackend) -> list[str]:
    return backend.requests[-1].user_texts()


def transcripts(config_dir: Path) -> list[Path]:
    return sorted((config_dir / "projects").rglob("*.jsonl"))


def disk_usage(config_dir: Path) -> int:
    return sum(path.stat().st_size for path in (config_dir / "projects").rglob("*") if path.is_file())


def cli_processes() -> list[int]:
    """Live Claude Code CLI processes started by this test process (the SDK starts them as direct children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            status = dict(line.split(":\t", 1) for line in (entry / "status").read_text().splitlines() if ":\t" in line)
            if int(status.get("PPid", "0")) != os.getpid() or status.get("State", "").startswith("Z"):
                continue
            program = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if Path(program).name == "claude":
                found.append(int(entry.name))
    return found


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    claude_backend.set_brain(FunctionModel(echo_or_call_brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)  # the tests count CLI processes
    yield model
    await model.aclose()


# --- lone surrogates --------------------------------------------------------------------------------------------


async def test_a_lone_surrogate_in_the_prompt_round_trips(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)

    first = await agent.run(f"open {ODD}")
    second = await agent.run("and then?", message_history=first.all_messages())

    assert first.output == f"echo: open {ON_THE_WIRE}"
    assert claude_backend.requests[0].user_texts() == [f"open {ON_THE_WIRE}"]
    assert user_texts_seen(claude_backend) == [f"open {ON_THE_WIRE}", "and then?"]
    assert second.output == "echo: and then?"


async def test_a_lone_surrogate_in_a_tool_result_round_trips(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)

    @agent.tool_plain
    def list_files() -> str:
        """List the files."""
        return ODD

    first = await agent.run("list")
    second = await agent.run("thanks", message_history=first.all_messages())

    assert first.output == f"found: {ON_THE_WIRE}"
    assert [result.text for result in claude_backend.requests[1].tool_results()] == [ON_THE_WIRE]
    assert second.output == "echo: thanks"
    assert [result.text for result in claude_backend.requests[-1].tool_results()] == [ON_THE_WIRE]
    # The history keeps what the tool returned; a replay of it (here: into a new model) sends the same again.
    fresh = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0)
    try:
        history = first.all_messages()
        history[-1].provider_details = {}  # type: ignore[union-attr]  # no session to go on from: replayed
        third = await Agent(fresh).run("once more", message_history=history)
    finally:
        await fresh.aclose()
    assert third.output == "echo: once more"
    assert [result.text for result in claude_backend.requests[-1].tool_results()] == [ON_THE_WIRE]


async def test_a_lone_surrogate_in_a_replayed_history_round_trips(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    other = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(f"saw {ODD}")])))
    earlier = await other.run(f"look at {ODD}")

    result = await Agent(model).run("go on", message_history=earlier.all_messages())

    assert result.output == "echo: go on"
    seen = claude_backend.requests[-1]
    assert seen.user_texts() == [f"look at {ON_THE_WIRE}", "go on"]
    replies = [p for m in seen.messages if isinstance(m, ModelResponse) for p in m.parts]
    assert [p.content if isinstance(p, TextPart) else p for p in replies] == [f"saw {ON_THE_WIRE}"]


# --- replayed transcripts on disk -------------------------------------------------------------------------------


async def test_replayed_histories_do_not_pile_up_on_disk(claude_backend: OfflineBackend):
    """A conversation that alternates between another model and Claude Code replays every Claude Code turn."""
    claude_backend.set_brain(FunctionModel(echo_or_call_brain))
    config_dir = claude_backend.config_dir
    model = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=1)
    other = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("x" * 2000)])))
    claude = Agent(model)
    counts: list[int] = []
    sizes: list[int] = []
    largest: list[int] = []
    messages: list[ModelMessage] = []
    try:
        for turn in range(6):
            messages = (await other.run(f"other {turn}", message_history=messages)).all_messages()
            messages = (await claude.run(f"claude {turn}", message_history=messages)).all_messages()
            counts.append(len(transcripts(config_dir)))
            sizes.append(disk_usage(config_dir))
            largest.append(max(path.stat().st_size for path in transcripts(config_dir)))
        assert user_texts_seen(claude_backend)[-3:] == ["claude 4", "other 5", "claude 5"]
    finally:
        await model.aclose()

    # One idle session is kept (keep_sessions=1) with its replayed transcript; the one before it is being closed
    # in the background. Older replays are removed: the disk holds at most two copies of the conversation.
    assert max(counts) <= 2, counts
    assert all(size <= 2 * big for size, big in zip(sizes, largest, strict=True)), (sizes, largest)
    assert transcripts(config_dir) == []  # nothing replayed is kept once the sessions are gone


@contextlib.contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """Make ``directory`` refuse new files, even for root (``chattr +i``); skip where that is impossible."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        undo = ["chmod", "755", str(directory)]
    else:
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", str(directory)], capture_output=True).returncode != 0:
            pytest.skip("cannot make a directory read-only for root here (no chattr +i)")
        undo = [chattr, "-i", str(directory)]
    try:
        probe = directory / "probe"
        with contextlib.suppress(OSError):
            probe.touch()
            probe.unlink()
            pytest.skip("the directory stayed writable")
        yield
    finally:
        subprocess.run(undo, check=True)


async def test_a_replay_into_a_read_only_config_dir_is_a_clear_error(claude_backend: OfflineBackend):
    config_dir = Path(tempfile.mkdtemp(prefix="ro-config-"))
    try:
        model = ClaudeCodeModel(env=claude_backend.cli_env(config_dir=config_dir))
        other = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("from another model")])))
        earlier = await other.run("question")
        with unwritable(config_dir), pytest.raises(ClaudeCodeError) as raised:
            await Agent(model).run("and now?", message_history=earlier.all_messages())
        await model.aclose()
    finally:
        shutil.rmtree(config_dir, ignore_errors=True)

    assert not isinstance(raised.value, OSError)
    assert str(config_dir) in str(raised.value)
    assert claude_backend.requests == []  # refused before any request was paid for


# --- claude_code_session="new" ----------------------------------------------------------------------------------


async def test_new_sessions_are_not_kept_for_follow_ups(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    before = set(transcripts(claude_backend.config_dir))

    first = await agent.run("one", model_settings=ClaudeCodeModelSettings({"claude_code_session": "new"}))
    second = await agent.run(
        "two",
        message_history=first.all_messages(),
        model_settings=ClaudeCodeModelSettings({"claude_code_session": "new"}),
    )

    assert second.output == "echo: two"
    assert user_texts_seen(claude_backend) == ["one", "two"]  # replayed faithfully
    assert cli_processes() == []  # no CLI process kept waiting for a follow-up
    assert set(transcripts(claude_backend.config_dir)) == before  # and no transcript kept either

    # The default keeps the session (the control: the check above can fail).
    await agent.run("three")
    assert len(cli_processes()) == 1
