"""Every request sends its own instructions, whatever session it goes on in, and instructions of any size.

End to end through the real Claude Code CLI and the offline backend, asserting on the system prompt the backend
received (pydantic-ai's own models send the current instructions with every request).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._process.prompt_file import INLINE_SYSTEM_PROMPT_BYTES, PROMPT_FILE_PREFIX
from claudecode_model._tools.execution import TransportType
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli


def instructions_seen(backend: OfflineBackend, index: int = -1) -> str:
    """The system block that carries the agent's system prompt (the CLI's own come first)."""
    return backend.requests[index].system_blocks[-1]


def source(result: object) -> object:
    return result.response.provider_details["session_source"]  # type: ignore[attr-defined]


@pytest.fixture
def no_prompt_files_left() -> Iterator[None]:
    yield
    left = [name for name in os.listdir(tempfile.gettempdir()) if name.startswith(PROMPT_FILE_PREFIX)]
    assert left == [], f"system prompt files left behind: {left}"


async def test_changed_instructions_reach_claude_in_a_branch_of_a_kept_session(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain("ok")
    first = await Agent(model, instructions="Answer as a pirate.").run("one")

    second = await Agent(model, instructions="Answer as a lawyer.").run("two", message_history=first.all_messages())
    third = await Agent(model, instructions="Answer as a poet.").run("three", message_history=second.all_messages())

    assert [instructions_seen(claude_backend, i) for i in range(3)] == [
        "Answer as a pirate.",
        "Answer as a lawyer.",
        "Answer as a poet.",
    ]
    assert source(second) == "fork"  # the live process was started with other instructions: not continued
    assert claude_backend.requests[-1].user_texts() == ["one", "two", "three"]
    # The same instructions again continue the live process.
    fourth = await Agent(model, instructions="Answer as a poet.").run("four", message_history=third.all_messages())
    assert (source(fourth), instructions_seen(claude_backend)) == ("live", "Answer as a poet.")


async def test_changed_instructions_reach_claude_in_a_resumed_session(claude_backend: OfflineBackend):
    claude_backend.set_brain("ok")
    first_model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        first = await Agent(first_model, instructions="Today is Monday.").run("one")
    finally:
        await first_model.aclose()
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        second = await Agent(model, instructions="Today is Tuesday.").run("two", message_history=first.all_messages())
    finally:
        await model.aclose()

    assert source(second) == "resume"
    assert instructions_seen(claude_backend) == "Today is Tuesday."
    assert "Monday" not in claude_backend.requests[-1].system


async def test_changed_instructions_reach_claude_in_a_replayed_history(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    claude_backend.set_brain("ok")
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("one")], instructions="Old instructions."),
        ModelResponse(parts=[TextPart("an answer of another model")], model_name="other"),
    ]

    second = await Agent(model, instructions="New instructions.").run("two", message_history=history)

    assert source(second) == "replay"
    assert instructions_seen(claude_backend) == "New instructions."


async def test_dynamic_instructions_follow_every_run(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    claude_backend.set_brain("ok")
    agent = Agent(model)
    profile = {"name": "Ada"}

    @agent.instructions
    def user_profile() -> str:
        return f"The user is {profile['name']}."

    first = await agent.run("one")
    profile["name"] = "Grace"
    await agent.run("two", message_history=first.all_messages())

    assert [instructions_seen(claude_backend, i) for i in range(2)] == ["The user is Ada.", "The user is Grace."]


async def test_instructions_that_change_within_a_run_reach_claude_with_the_tool_results(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    # A turn parked for tool results was started with the first request's instructions: the second request's
    # instructions need a new session, which takes the calls up from the history.
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])

    claude_backend.set_brain(FunctionModel(brain))
    agent: Agent[None, str] = Agent(model)

    @agent.instructions
    def step(ctx: RunContext[None]) -> str:
        return f"Step {sum(isinstance(m, ModelResponse) for m in ctx.messages)}."

    @agent.tool_plain
    def look() -> str:
        return "looked"

    result = await agent.run("go")

    assert result.output == "done"
    assert [instructions_seen(claude_backend, i) for i in range(2)] == ["Step 0.", "Step 1."]
    assert [r.text for r in claude_backend.requests[1].tool_results()] == ["looked"]


async def test_a_spare_started_with_other_instructions_is_not_claimed(claude_backend: OfflineBackend):
    claude_backend.set_brain("ok")
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=1)
    try:
        assert await model.prewarm(Agent(model, instructions="Spare instructions."))
        result = await Agent(model, instructions="Other instructions.").run("one")
    finally:
        await model.aclose()

    assert source(result) == "fresh"
    assert instructions_seen(claude_backend) == "Other instructions."


def huge(tag: str) -> str:
    """300 KB of instructions (more than one command-line argument may hold), marked at both ends."""
    return f"{tag}-START\n" + "Follow these rules.\n" * 16_000 + f"{tag}-END"


@pytest.mark.usefixtures("no_prompt_files_left")
@pytest.mark.parametrize("transport", ["sdk", "stdio"])
async def test_huge_instructions_reach_claude_whole_on_every_path(
    claude_backend: OfflineBackend, transport: TransportType
):
    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        asked = any(isinstance(p, UserPromptPart) and p.content == "use it" for p in last.parts)
        if asked and info.function_tools:
            return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {})])
        return ModelResponse(parts=[TextPart("done")])

    claude_backend.set_brain(FunctionModel(brain))
    first_text, second_text = huge("FIRST"), huge("SECOND")
    assert len(first_text.encode()) > 2 * INLINE_SYSTEM_PROMPT_BYTES
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport)

    def agent(instructions: str) -> Agent[None, str]:
        agent = Agent(model, instructions=instructions)

        @agent.tool_plain
        def lookup() -> str:
            return "found"

        return agent

    try:
        first = await agent(first_text).run("use it")
        second = await agent(second_text).run("more", message_history=first.all_messages())
        third = await agent(second_text).run("again", message_history=second.all_messages())
    finally:
        await model.aclose()
    third_text = huge("THIRD")
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, tool_transport=transport)
    try:  # another model instance: the conversation is resumed or replayed in a new process
        fourth = await agent(third_text).run("last", message_history=third.all_messages())
    finally:
        await model.aclose()

    assert [source(first), source(second), source(third)] == ["fresh", "fork", "live"]
    assert source(fourth) in ("resume", "replay")
    assert [instructions_seen(claude_backend, i) for i in range(5)] == [
        first_text,
        first_text,
        second_text,
        second_text,
        third_text,
    ]
    assert [r.text for r in claude_backend.requests[1].tool_results()] == ["found"]


async def test_changed_instructions_reach_claude_in_a_session_resumed_from_the_store(
    claude_backend: OfflineBackend, tmp_path: Path
):
    # Two workers that share only a session store: the second resumes the first's session from it.
    from claudecode_model import SQLiteSessionStore

    claude_backend.set_brain("ok")
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    envs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        envs.append(claude_backend.cli_env(config_dir=tmp_path / name))
    try:
        first_model = ClaudeCodeModel(env=envs[0], session_store=store, keep_sessions=0, spare_sessions=0)
        try:
            first = await Agent(first_model, instructions="The user is on the free plan.").run("one")
        finally:
            await first_model.aclose()
        model = ClaudeCodeModel(env=envs[1], session_store=store, keep_sessions=0, spare_sessions=0)
        try:
            second = await Agent(model, instructions="The user is on the pro plan.").run(
                "two", message_history=first.all_messages()
            )
        finally:
            await model.aclose()
    finally:
        await store.aclose()

    assert source(second) == "resume"
    assert instructions_seen(claude_backend) == "The user is on the pro plan."
    assert claude_backend.requests[-1].user_texts() == ["one", "two"]
