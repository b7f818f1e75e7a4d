"""A run sees exactly its ``message_history``: branches, cut-back retries, concurrent runs, stored histories.

End to end through the real Claude Code CLI and the offline backend; every test checks the conversation the
backend received (what Claude would see), not only the run's output.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel
from claudecode_model._compat import send_control_request
from claudecode_model.testing import OfflineBackend, RecordedRequest
from tests._support.brains import echo_brain
from tests._support.responses import source_of

pytestmark = pytest.mark.cli


def conversation(request: RecordedRequest) -> list[str]:
    """The user prompts and assistant texts of a request, in order (the CLI's reminders stripped)."""
    lines: list[str] = []
    for message in request.messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    lines.append(f"user: {part.content}")
        else:
            lines.extend(f"assistant: {part.content}" for part in message.parts if isinstance(part, TextPart))
    return lines


def session_of(messages: list[ModelMessage]) -> str:
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    session = (response.provider_details or {}).get("session_id")
    assert isinstance(session, str)
    return session


def requests_with(backend: OfflineBackend, prompt: str) -> list[RecordedRequest]:
    return [request for request in backend.requests if f"user: {prompt}" in conversation(request)]


@pytest.fixture
def model(model: ClaudeCodeModel, claude_backend: OfflineBackend) -> ClaudeCodeModel:
    """The shared CLI model, with the backend answering through ``echo_brain``."""
    claude_backend.set_brain(FunctionModel(echo_brain))
    return model


async def test_regenerate_runs_twice_from_the_same_history(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    root = await agent.run("root")

    first = await agent.run("once more", message_history=root.all_messages())
    second = await agent.run("once more", message_history=root.all_messages())

    expected = ["user: root", "assistant: echo: root", "user: once more"]
    assert [conversation(r) for r in claude_backend.requests[1:]] == [expected, expected]
    assert first.output == second.output == "echo: once more"
    assert session_of(first.all_messages()) != session_of(second.all_messages())


async def test_branches_do_not_see_each_other(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    root = await agent.run("root")
    branch_a = await agent.run("branch A", message_history=root.all_messages())
    branch_b = await agent.run("branch B", message_history=root.all_messages())

    # Each branch continues on its own: A's follow-up sees A only, B's sees B only.
    await agent.run("after A", message_history=branch_a.all_messages())
    await agent.run("after B", message_history=branch_b.all_messages())

    assert conversation(claude_backend.requests[2]) == ["user: root", "assistant: echo: root", "user: branch B"]
    assert conversation(claude_backend.requests[3]) == [
        "user: root",
        "assistant: echo: root",
        "user: branch A",
        "assistant: echo: branch A",
        "user: after A",
    ]
    assert conversation(claude_backend.requests[4]) == [
        "user: root",
        "assistant: echo: root",
        "user: branch B",
        "assistant: echo: branch B",
        "user: after B",
    ]


async def test_cut_back_retry_forgets_the_later_turns(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    one = await agent.run("one")
    two = await agent.run("two", message_history=one.all_messages())
    three = await agent.run("three", message_history=two.all_messages())

    retry = await agent.run("three, again", message_history=three.all_messages()[:-2])

    assert conversation(claude_backend.requests[-1]) == [
        "user: one",
        "assistant: echo: one",
        "user: two",
        "assistant: echo: two",
        "user: three, again",
    ]
    assert retry.output == "echo: three, again"
    # The retried conversation goes on from the retry, not from the turn it replaced.
    await agent.run("four", message_history=retry.all_messages())
    assert conversation(claude_backend.requests[-1])[-3:] == [
        "user: three, again",
        "assistant: echo: three, again",
        "user: four",
    ]
    assert "user: three" not in conversation(claude_backend.requests[-1])


async def test_two_concurrent_branches_get_two_sessions(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    agent = Agent(model)
    root = await agent.run("root")

    branch_a, branch_b = await asyncio.gather(
        agent.run("branch A", message_history=root.all_messages()),
        agent.run("branch B", message_history=root.all_messages()),
    )

    assert session_of(branch_a.all_messages()) != session_of(branch_b.all_messages())
    for prompt in ("branch A", "branch B"):
        (seen,) = requests_with(claude_backend, prompt)
        assert conversation(seen) == ["user: root", "assistant: echo: root", f"user: {prompt}"]
    # And each goes on with its own turns only.
    after_a, _ = await asyncio.gather(
        agent.run("after A", message_history=branch_a.all_messages()),
        agent.run("after B", message_history=branch_b.all_messages()),
    )
    assert after_a.output == "echo: after A"
    (seen_a,) = requests_with(claude_backend, "after A")
    (seen_b,) = requests_with(claude_backend, "after B")
    assert "user: branch B" not in conversation(seen_a)
    assert "user: branch A" not in conversation(seen_b)
    assert conversation(seen_b)[-3:] == ["user: branch B", "assistant: echo: branch B", "user: after B"]


async def test_stored_history_resumed_on_a_new_model_after_both_branches_ran(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    agent = Agent(model)
    root = await agent.run("root")
    stored_root = ModelMessagesTypeAdapter.dump_json(root.all_messages())
    branch_a = await agent.run("branch A", message_history=root.all_messages())
    stored_a = ModelMessagesTypeAdapter.dump_json(branch_a.all_messages())
    await agent.run("branch B", message_history=root.all_messages())
    await model.aclose()  # the live CLI processes are gone; only the transcripts on disk remain
    # Branch B was a fork made for one purpose: removed with its process. The root session's transcript stays.
    kept = sorted(path.stem for path in (claude_backend.config_dir / "projects").rglob("*.jsonl"))
    assert kept == [session_of(root.all_messages())]

    fresh = ClaudeCodeModel(env=claude_backend.cli_env())
    try:
        from_root = await Agent(fresh).run(
            "from root", message_history=ModelMessagesTypeAdapter.validate_json(stored_root)
        )
        from_a = await Agent(fresh).run("from A", message_history=ModelMessagesTypeAdapter.validate_json(stored_a))
    finally:
        await fresh.aclose()

    assert from_root.output == "echo: from root"
    assert from_a.output == "echo: from A"
    (seen_root,) = requests_with(claude_backend, "from root")
    (seen_a,) = requests_with(claude_backend, "from A")
    assert conversation(seen_root) == ["user: root", "assistant: echo: root", "user: from root"]
    assert conversation(seen_a) == [
        "user: root",
        "assistant: echo: root",
        "user: branch A",
        "assistant: echo: branch A",
        "user: from A",
    ]


async def test_a_history_a_rewind_cut_off_is_replayed_not_resumed(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    """Claude Code's ``rewind_conversation`` (what its ``/rewind`` does, from any client of the session) cuts the
    conversation out of its transcript, and the CLI then finds no entry to resume at: the history is replayed."""
    root = await Agent(model).run("root")
    await model.aclose()  # only the transcript remains
    session = session_of(root.all_messages())
    [transcript] = (claude_backend.config_dir / "projects").rglob(f"{session}.jsonl")
    rows = [json.loads(line) for line in transcript.read_text().splitlines()]
    first_prompt = next(row["uuid"] for row in rows if row.get("type") == "user")
    rewinding = ClaudeSDKClient(ClaudeAgentOptions(env=claude_backend.cli_env(), resume=session, setting_sources=[]))
    await rewinding.connect()
    try:
        cut = await send_control_request(
            rewinding, {"subtype": "rewind_conversation", "target_message_uuid": first_prompt}, seconds=30
        )
    finally:
        await rewinding.disconnect()
    assert cut["rewound"] is True

    fresh = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0)
    try:
        after = await Agent(fresh).run("after the rewind", message_history=root.all_messages())
    finally:
        await fresh.aclose()

    assert after.output == "echo: after the rewind"
    assert source_of(after) == "replay"
    (seen,) = requests_with(claude_backend, "after the rewind")
    assert conversation(seen) == ["user: root", "assistant: echo: root", "user: after the rewind"]


async def test_a_plain_follow_up_still_continues_the_live_session(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    agent = Agent(model)
    first = await agent.run("one")
    second = await agent.run("two", message_history=first.all_messages())
    third = await agent.run("three", message_history=second.all_messages())

    assert session_of(first.all_messages()) == session_of(second.all_messages()) == session_of(third.all_messages())
    assert conversation(claude_backend.requests[-1]) == [
        "user: one",
        "assistant: echo: one",
        "user: two",
        "assistant: echo: two",
        "user: three",
    ]
