"""A new conversation served by a kept CLI whose conversation is rewound to empty, through the real CLI and the
offline backend: Claude gets what a new CLI would send, the old conversation's follow-ups replay it, the new one's
resume, on the same model, another model, and after the CLI is gone (the pool's choice of a session is tested on the
in-memory CLI, ``test_rewound_sessions.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, AgentRunResult, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.models.function import FunctionModel

from claudecode_model import ClaudeCodeModel, SQLiteSessionStore
from claudecode_model.testing import OfflineBackend, RecordedRequest
from tests._support.agents import agent_with_probe
from tests._support.polling import wait_for
from tests._support.processes import cli_children
from tests._support.responses import details, session_of, source_of
from tests.model.test_spares_cli import tool_then_text

pytestmark = pytest.mark.cli


@pytest.fixture
def backend(claude_backend: OfflineBackend) -> OfflineBackend:
    claude_backend.set_brain(FunctionModel(tool_then_text))
    return claude_backend


_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[0-9a-f]+")


def comparable(requests: list[RecordedRequest]) -> list[str]:
    """The request bodies with their session, message and tool call ids blanked."""
    return [_IDS.sub("<id>", json.dumps(request.raw, sort_keys=True)) for request in requests]


def prompts(request: RecordedRequest) -> list[str]:
    """The user prompts (text blocks of user messages) a request carries, in order."""
    found: list[str] = []
    for message in request.raw["messages"]:
        if message["role"] != "user":
            continue
        content: Any = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        found += [block["text"] for block in blocks if block.get("type") == "text" and block["text"] in PROMPTS]
    return found


PROMPTS = ("first conversation", "second conversation", "first again", "second again", "second once more")


async def follow_up(
    backend: OfflineBackend, agent: Agent[None, str], prompt: str, after: AgentRunResult[str]
) -> tuple[AgentRunResult[str], list[str]]:
    """``prompt`` run on the history of ``after``, and the prompts the run's first API request carried."""
    sent = len(backend.requests)
    result = await agent.run(prompt, message_history=after.all_messages())
    return result, prompts(backend.requests[sent])


async def test_a_kept_cli_serves_a_new_conversation_as_a_new_cli_would(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    # Launched otherwise (one more variable): it never takes the other model's CLI.
    reference = ClaudeCodeModel(env={**backend.cli_env(), "REFERENCE_RUN": "1"}, spare_sessions=0)
    try:
        agent, _ = agent_with_probe(model, cli_children)
        first = await agent.run("first conversation")
        clis = cli_children()
        sent = len(backend.requests)

        second = await agent.run("second conversation")

        assert source_of(second) == "rewound"
        assert second.output == "tool said p"
        assert cli_children() == clis  # no process was started for it
        assert session_of(second) == session_of(first)  # the CLI keeps its session id
        rewound = backend.requests[sent:]
        assert [prompts(request) for request in rewound] == [["second conversation"]] * 2

        # What a new CLI sends for the same conversation: the same requests, byte for byte but for the ids.
        fresh_agent, _ = agent_with_probe(reference, cli_children)
        sent = len(backend.requests)
        fresh = await fresh_agent.run("second conversation")
        assert source_of(fresh) == "fresh"
        assert comparable(rewound) == comparable(backend.requests[sent:])
        assert second.usage == fresh.usage  # tokens and cost: the CLI's cumulative cost goes on across the rewind
        assert second.usage.cost is not None
        assert second.usage.cost > 0
    finally:
        await model.aclose()
        await reference.aclose()


async def test_the_old_conversation_replays_and_the_new_one_goes_on_on_every_path(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    other = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        agent, _ = agent_with_probe(model, cli_children)
        first = await agent.run("first conversation")
        second = await agent.run("second conversation")
        assert source_of(second) == "rewound"

        # The same model: the old conversation replays its history into a new CLI, the new one goes on live.
        first_again, sent_prompts = await follow_up(backend, agent, "first again", first)
        assert source_of(first_again) == "replay"
        assert sent_prompts == ["first conversation", "first again"]
        second_again, sent_prompts = await follow_up(backend, agent, "second again", second)
        assert source_of(second_again) == "live"
        assert sent_prompts == ["second conversation", "second again"]

        # Another model while the CLI still holds the session (in use): a branch of its transcript.
        other_agent, _ = agent_with_probe(other, cli_children)
        branched, sent_prompts = await follow_up(backend, other_agent, "second once more", second)
        assert source_of(branched) == "fork"
        assert sent_prompts == ["second conversation", "second once more"]

        # Once the CLI is gone, the transcript itself: the new conversation resumes, the old one still replays.
        await model.aclose()
        resumed, sent_prompts = await follow_up(backend, other_agent, "second once more", second_again)
        assert source_of(resumed) == "resume"
        assert sent_prompts == ["second conversation", "second again", "second once more"]
        replayed, sent_prompts = await follow_up(backend, other_agent, "first again", first)
        assert source_of(replayed) == "replay"
        assert sent_prompts == ["first conversation", "first again"]
    finally:
        await model.aclose()
        await other.aclose()


async def test_another_worker_replays_the_old_conversation_from_the_session_store(
    backend: OfflineBackend, tmp_path: Any
) -> None:
    store_path = tmp_path / "sessions.db"
    worker = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, session_store=SQLiteSessionStore(store_path))
    try:
        agent, _ = agent_with_probe(worker, cli_children)
        first = await agent.run("first conversation")
        second = await agent.run("second conversation")
        assert source_of(second) == "rewound"
    finally:
        await worker.aclose()
    # Another worker: its own CLI configuration (no transcript files of the first), the same store.
    elsewhere = {**backend.cli_env(), "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")}
    another = ClaudeCodeModel(env=elsewhere, spare_sessions=0, session_store=SQLiteSessionStore(store_path))
    try:
        agent, _ = agent_with_probe(another, cli_children)
        replayed, sent_prompts = await follow_up(backend, agent, "first again", first)
        assert source_of(replayed) == "replay"
        assert sent_prompts == ["first conversation", "first again"]
        resumed, sent_prompts = await follow_up(backend, agent, "second again", second)
        assert source_of(resumed) == "resume"
        assert sent_prompts == ["second conversation", "second again"]
    finally:
        await another.aclose()


async def test_a_brand_new_model_is_served_by_the_cli_another_model_kept(backend: OfflineBackend) -> None:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    brand_new = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0)
    try:
        agent, _ = agent_with_probe(model, cli_children)
        await agent.run("first conversation")
        clis = cli_children()

        new_agent, _ = agent_with_probe(brand_new, cli_children)
        second = await new_agent.run("second conversation")

        assert source_of(second) == "rewound"
        assert cli_children() == clis
        follow_up = await new_agent.run("second again", message_history=second.all_messages())
        assert source_of(follow_up) == "live"  # kept by the model it served
        assert details(follow_up.all_messages()[-1])["session_id"] == session_of(second)
        other_tools = Agent(brand_new, instructions="Another agent.")
        assert source_of(await other_tools.run("no tools here")) == "fresh"  # another signature: not rewound
    finally:
        await model.aclose()
        await brand_new.aclose()


async def test_an_approval_in_a_rewound_conversation_holds_after_its_turn_is_gone(
    backend: OfflineBackend, tmp_path: Any
) -> None:
    """The rewound conversation asks for an approval; its waiting turn is gone (the model closed, as on a restarted
    worker); another model takes up the call from a branch of the transcript, which also holds the old conversation's
    cut entries. Claude gets the person's decision and the new conversation alone."""
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, session_store=store)
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, instructions="Be brief.", output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def probe() -> str:
        """Report."""
        return "p"

    try:
        first = await agent.run("first conversation")
        assert isinstance(first.output, DeferredToolRequests)
        [call] = first.output.approvals
        first = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )
        assert first.output == "tool said p"
        second = await agent.run("second conversation")
        assert source_of(second) == "rewound"
        assert isinstance(second.output, DeferredToolRequests)
        [call] = second.output.approvals
        reply = details(second.all_messages()[-1])
        config = Path(backend.cli_env()["CLAUDE_CONFIG_DIR"])
        assert await wait_for(  # the reply is in the transcript (a turn cut off before that is replayed)
            lambda: any(
                reply["resume_session_at"] in path.read_text()
                for path in config.glob(f"projects/*/{reply['session_id']}.jsonl")
            )
        )
    finally:
        await model.aclose()  # the waiting turn is gone
    other = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, session_store=store)
    try:
        sent = len(backend.requests)
        decided = await Agent(
            other, instructions="Be brief.", output_type=[str, DeferredToolRequests], tools=[probe]
        ).run(
            message_history=second.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={call.tool_call_id: ToolDenied("No, said the person.")}
            ),
        )
        assert decided.output == "tool said No, said the person."
        assert source_of(decided) == "fork"  # branched at the deferred call from the recorded transcript
        [request] = backend.requests[sent:]
        assert prompts(request) == ["second conversation"]
        [result] = request.tool_results()
        assert (result.text, result.is_error) == ("No, said the person.", False)  # as pydantic-ai sends a denial
    finally:
        await other.aclose()
