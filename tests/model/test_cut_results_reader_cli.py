"""A tool result longer than Claude Code shows is cut, and Claude reads the rest without anyone opting in: the marker
names the call's ``tool_use`` id and the tools of the library's ``claudecode_results`` server, which the CLI offers
from the next API request of the same turn on (and never before a result is cut).

End to end through the real Claude Code CLI, both tool transports and both execution modes, asserting on what the
offline backend received.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, CLITimeoutError
from claudecode_model._history.cut_results import READ_RESULT_TOOL, SEARCH_RESULT_TOOL, TEXT_LIMIT
from claudecode_model._sessions.session import CLISession
from claudecode_model._tools.execution import ToolExecution, TransportType
from claudecode_model._tools.result_reader import ResultReader
from claudecode_model.testing import OfflineBackend
from tests._support.agents import add_constant_tools, numbered_lines, run_then_close
from tests._support.brains import tool_returns

pytestmark = pytest.mark.cli

DUMP = "mcp__pydantic_tools__dump"
TAIL = 1_000


def last_result_text(messages: list[ModelMessage]) -> str:
    [part] = tool_returns(messages[-1])
    return str(part.content)


def reads_the_tail(size: int):
    """A brain: call ``dump``; on the cut result, read its last characters with the tool the marker names; then
    answer with what it read."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = tool_returns(*messages)
        if not results:
            return ModelResponse(parts=[ToolCallPart(DUMP, {})])
        text = last_result_text(messages)
        if len(results) == 1:
            match = re.search(r"read_tool_result\(tool_use_id='([^']+)', offset=(\d+)\)", text)
            assert match is not None, text[-600:]
            args = {"tool_use_id": match.group(1), "offset": size - TAIL, "length": TAIL}
            return ModelResponse(parts=[ToolCallPart(READ_RESULT_TOOL, args)])
        return ModelResponse(parts=[TextPart(f"read {len(text)} characters")])

    return brain


def config_of(backend: OfflineBackend) -> str:
    path = Path(backend.cli_env()["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("execution", ["agent", "cli"])
@pytest.mark.parametrize("transport", ["sdk", "stdio"])
async def test_claude_reads_the_tail_of_a_3_mb_result_with_the_tool_its_marker_names(
    claude_backend: OfflineBackend, transport: TransportType, execution: ToolExecution, monkeypatch: pytest.MonkeyPatch
):
    readers: list[ResultReader] = []
    original_init = ResultReader.__init__

    def recording_init(self: ResultReader) -> None:
        original_init(self)
        readers.append(self)

    monkeypatch.setattr(ResultReader, "__init__", recording_init)
    size = 3_000_000
    output = numbered_lines(size)
    claude_backend.set_brain(FunctionModel(reads_the_tail(size)))
    model = ClaudeCodeModel(
        env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport, tool_execution=execution
    )
    agent = Agent(model)
    add_constant_tools(agent, dump=output)
    result = await run_then_close(agent, model, "dump it")

    first, after_cut, after_read = claude_backend.requests
    # Before a result is cut Claude is offered exactly the agent's tools.
    assert first.tool_names == [DUMP]
    assert sorted(after_cut.tool_names) == sorted([DUMP, READ_RESULT_TOOL, SEARCH_RESULT_TOOL])
    [(dump_id, cut, _)] = after_cut.tool_results()
    assert len(cut) <= TEXT_LIMIT
    assert output.startswith(cut[: cut.index("\n[tool result cut")])
    assert f"tool_use_id={dump_id!r}" in cut
    # The reader's answer holds the tail of the result, exactly.
    read = after_read.tool_results()[-1]
    assert not read.is_error
    assert read.text.startswith(output[-TAIL:])
    assert f"characters {size - TAIL:,} to {size:,} of {size:,}; the end of the result" in read.text
    assert result.output == f"read {len(read.text)} characters"
    # The agent's history keeps the result whole: the run's own tool return, or (in Claude Code's loop) the
    # native return that reports the call.
    kind = ToolReturnPart if execution == "agent" else NativeToolReturnPart
    [returned] = [
        p for m in result.all_messages() for p in m.parts if isinstance(p, kind) and p.tool_call_id == dump_id
    ]
    assert returned.content == output
    # Claude's call of the reader is reported as a call Claude Code ran (not one for pydantic-ai to run).
    [reader_call] = [p for m in result.all_messages() for p in m.parts if isinstance(p, NativeToolCallPart)][-1:]
    assert reader_call.tool_name == READ_RESULT_TOOL
    # Nothing is left: the texts are dropped with the session, and the server is not left disabled in the config.
    assert readers
    assert all(not reader.kept for reader in readers)
    assert "claudecode_results" not in config_of(claude_backend)


async def test_search_finds_text_past_the_cut_and_reports_its_offset(claude_backend: OfflineBackend):
    size = 1_000_000
    output = numbered_lines(size)
    needle = "line 0030000 of the output"
    offset = output.index(needle)

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(DUMP, {})])
        text = last_result_text(messages)
        if "[tool result cut" in text:
            tool_use_id = re.search(r"tool_use_id='([^']+)'", text)
            assert tool_use_id is not None
            args = {"tool_use_id": tool_use_id.group(1), "pattern": needle, "context": 10}
            return ModelResponse(parts=[ToolCallPart(SEARCH_RESULT_TOOL, args)])
        return ModelResponse(parts=[TextPart("found")])

    claude_backend.set_brain(FunctionModel(brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    agent = Agent(model)
    add_constant_tools(agent, dump=output)
    await run_then_close(agent, model, "dump it")

    found = claude_backend.requests[-1].tool_results()[-1]
    assert offset > TEXT_LIMIT
    assert (
        found.text == f"[match at offset {offset}; text from offset {offset - 10}]\n{output[offset - 10 : offset + 36]}"
    )


@pytest.mark.parametrize("execution", ["agent", "cli"])
async def test_results_claude_code_shows_whole_leave_the_tool_list_alone(
    claude_backend: OfflineBackend, execution: ToolExecution
):
    calls = iter([ToolCallPart(DUMP, {}), ToolCallPart(DUMP, {})])

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = next(calls, None)
        return ModelResponse(parts=[call if call is not None else TextPart("done")])

    claude_backend.set_brain(FunctionModel(brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_execution=execution)
    agent = Agent(model)
    add_constant_tools(agent, dump=numbered_lines(TEXT_LIMIT))
    await run_then_close(agent, model, "dump it")

    assert [request.tool_names for request in claude_backend.requests] == [[DUMP]] * 3
    assert all("[tool result cut" not in r.text for request in claude_backend.requests for r in request.tool_results())
    assert "claudecode_results" not in config_of(claude_backend)


@pytest.mark.parametrize(("path", "execution"), [("resumed", "agent"), ("replayed", "agent"), ("replayed", "cli")])
async def test_a_conversation_continued_on_another_model_instance_still_reads_the_cut_result(
    claude_backend: OfflineBackend, path: str, execution: ToolExecution, tmp_path: Path
):
    """Resumed from the CLI's transcript, or replayed from the history (another config dir: no transcript to
    resume), Claude sees the result cut as before, not whole (which made the CLI compact the conversation away)."""
    size = 3_000_000
    output = numbered_lines(size)
    claude_backend.set_brain(FunctionModel(reads_the_tail(size)))
    first_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_execution=execution)
    agent = Agent(first_model)
    add_constant_tools(agent, dump=output)
    first = await run_then_close(agent, first_model, "dump it")
    [dump_id] = [
        p.tool_call_id
        for m in first.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart | NativeToolReturnPart) and p.tool_name == "dump"
    ]

    def reads_the_middle(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if tool_returns(messages[-1]):
            return ModelResponse(parts=[TextPart("read it again")])
        args = {"tool_use_id": dump_id, "offset": 2_000_000, "length": 500}
        return ModelResponse(parts=[ToolCallPart(READ_RESULT_TOOL, args)])

    claude_backend.reset()
    claude_backend.set_brain(FunctionModel(reads_the_middle))
    env = claude_backend.cli_env(tmp_path / "config" if path == "replayed" else None)
    second_model = ClaudeCodeModel(env=env, spare_sessions=0, tool_execution=execution)
    second = await run_then_close(agent, second_model, "read the middle", message_history=first.all_messages())

    assert second.output == "read it again"
    details = second.all_messages()[-1].provider_details or {}
    assert details["session_source"] in ({"replay"} if path == "replayed" else {"resume", "fork"})
    asked, answered = claude_backend.requests
    [(_, cut, _), *_] = asked.tool_results()
    assert len(cut) <= TEXT_LIMIT
    assert f"read_tool_result(tool_use_id={dump_id!r}" in cut
    assert "continued from a previous conversation" not in json.dumps(asked.raw)
    assert READ_RESULT_TOOL in asked.tool_names
    read = answered.tool_results()[-1]
    assert read.tool_use_id != dump_id
    assert not read.is_error
    assert read.text.startswith(output[2_000_000:2_000_500])


@pytest.mark.parametrize("execution", ["agent", "cli"])
async def test_two_results_cut_in_one_reply_are_both_read(claude_backend: OfflineBackend, execution: ToolExecution):
    outputs = {"a": numbered_lines(700_000), "b": numbered_lines(900_000).upper()}

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages[-1])
        if not returns:
            return ModelResponse(parts=[ToolCallPart(DUMP, {"which": "a"}), ToolCallPart(DUMP, {"which": "b"})])
        ids = [match for p in returns for match in re.findall(r"tool_use_id='([^']+)'", str(p.content))]
        if len(ids) == 2:
            return ModelResponse(
                parts=[ToolCallPart(READ_RESULT_TOOL, {"tool_use_id": i, "offset": 600_000, "length": 50}) for i in ids]
            )
        return ModelResponse(parts=[TextPart("both read")])

    claude_backend.set_brain(FunctionModel(brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_execution=execution)
    agent = Agent(model)

    @agent.tool_plain
    def dump(which: str) -> str:
        return outputs[which]

    result = await run_then_close(agent, model, "dump both")

    assert result.output == "both read"
    reads = [r.text for r in claude_backend.requests[-1].tool_results()[-2:]]
    assert sorted(text[:50] for text in reads) == sorted(text[600_000:600_050] for text in outputs.values())
    assert "claudecode_results" not in config_of(claude_backend)


async def test_a_reader_left_off_in_the_config_by_a_killed_cli_is_turned_on_again(claude_backend: OfflineBackend):
    """A CLI killed between turning the server off and on leaves it listed as disabled in Claude Code's config."""
    size = 600_000
    output = numbered_lines(size)
    claude_backend.set_brain(FunctionModel(reads_the_tail(size)))

    async def run_once() -> str:
        model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
        agent = Agent(model)
        add_constant_tools(agent, dump=output)
        return (await run_then_close(agent, model, "dump it")).output

    await run_once()  # creates the project's entry in the config
    path = Path(claude_backend.cli_env()["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    config = json.loads(path.read_text())
    for project in config["projects"].values():
        project["disabledMcpServers"] = ["claudecode_results"]
    path.write_text(json.dumps(config))
    claude_backend.reset()

    assert (await run_once()).startswith("read ")
    *_, read = claude_backend.requests
    assert read.tool_results()[-1].text.startswith(output[-TAIL:])
    assert "claudecode_results" not in config_of(claude_backend)


async def test_the_timeout_covers_offering_the_reader_at_the_start_of_a_turn(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
):
    """A CLI that never answers the request to offer the reading tools (for a history holding a cut result) is
    stopped when the request's timeout runs out; no process is left (the project's leak guard checks)."""
    size = 600_000
    output = numbered_lines(size)
    claude_backend.set_brain(FunctionModel(reads_the_tail(size)))
    first_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    agent = Agent(first_model)
    add_constant_tools(agent, dump=output)
    first = await run_then_close(agent, first_model, "dump it")

    async def never_answers(self: CLISession, server_name: str) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(CLISession, "relist_tools", never_answers)
    second_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        with pytest.raises(CLITimeoutError):
            await agent.run(
                "again", message_history=first.all_messages(), model=second_model, model_settings={"timeout": 5}
            )
    finally:
        await second_model.aclose()


async def test_an_approved_call_continued_on_another_model_instance_has_its_cut_result_read(
    claude_backend: OfflineBackend,
):
    """The approved call's result reaches Claude through the call Claude Code re-runs on resume (no parked turn on
    this model): the reading tools are offered from inside that call as in a live turn."""
    size = 3_000_000
    output = numbered_lines(size)
    claude_backend.set_brain(FunctionModel(reads_the_tail(size)))
    first_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    agent = Agent(first_model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def dump() -> str:
        return output

    first = await run_then_close(agent, first_model, "dump it")
    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.approvals

    second_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    second = await run_then_close(
        agent,
        second_model,
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
    )

    *_, after_cut, after_read = claude_backend.requests
    assert READ_RESULT_TOOL in after_cut.tool_names
    assert f"tool_use_id={call.tool_call_id!r}" in after_cut.tool_results()[-1].text
    assert after_read.tool_results()[-1].text.startswith(output[-TAIL:])
    assert second.output == f"read {len(after_read.tool_results()[-1].text)} characters"
