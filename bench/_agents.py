"""The agents the suites run on ``ClaudeCodeModel``, and what their responses report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model

from claudecode_model.model import ClaudeCodeModel


def probe_agent(model: Model) -> Agent[None, str]:
    """An agent with one tool; async like the raw side's (pydantic-ai runs a sync tool in a worker thread)."""
    agent = Agent(model)

    @agent.tool_plain
    async def probe(n: int) -> str:
        """Returns a probe value for n."""
        return f"p{n}"

    return agent


def deps_agent(model: ClaudeCodeModel) -> Agent[str, str]:
    """An agent whose tool answers with the run's deps: concurrent runs can be told apart."""
    agent = Agent(model, deps_type=str)

    @agent.tool
    async def probe(ctx: RunContext[str], n: int) -> str:
        """Returns a probe value for n."""
        return f"{ctx.deps}-{n}"

    return agent


def last_details(messages: Sequence[ModelMessage]) -> dict[str, Any]:
    """The ``provider_details`` of the last response of ``messages``."""
    last = messages[-1]
    return dict(last.provider_details or {}) if isinstance(last, ModelResponse) else {}


def first_details(messages: Sequence[ModelMessage]) -> dict[str, Any]:
    """The ``provider_details`` of the first response of ``messages`` (of a run's new messages: its first response;
    with agent-run tools, later responses continue the same CLI turn)."""
    first = next(message for message in messages if isinstance(message, ModelResponse))
    return dict(first.provider_details or {})


def session_id(messages: Sequence[ModelMessage]) -> str:
    """The Claude Code session id the last response of ``messages`` reports."""
    return str(last_details(messages).get("session_id"))
