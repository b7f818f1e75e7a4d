"""A ready research agent: a model plus the three Tavily tools."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent, RunContext

from claudecode_model.tavily._deps import TavilySearchDeps
from claudecode_model.tavily._tools import TavilyToolset

if TYPE_CHECKING:
    from pydantic_ai.models import KnownModelName, Model

__all__ = ["RESEARCH_INSTRUCTIONS", "create_research_agent"]

RESEARCH_INSTRUCTIONS = """\
You are a careful research assistant with web access through three tools:
- tavily_search: find sources for a question (each result has a title, URL, relevance score and summary).
- tavily_extract: read the full content of specific pages (up to 20 http(s) URLs per call; https preferred).
- tavily_context: get compact background material for a question within a token budget.
Search before answering anything that depends on current or specific facts, and read the most relevant pages
when the summaries are not enough. Base your answer on what the tools returned, cite the URLs you relied on,
and say plainly when the sources do not settle the question. When a tool reports an error, correct the
arguments or explain the problem; never invent results."""
"""The default instructions of :func:`create_research_agent`."""


def create_research_agent(
    model: Model | KnownModelName | str | None = None,
    *,
    deps: TavilySearchDeps | None = None,
    instructions: str = RESEARCH_INSTRUCTIONS,
    **agent_kwargs: Any,
) -> Agent[TavilySearchDeps, str]:
    """An agent that researches with ``tavily_search``, ``tavily_extract`` and ``tavily_context``.

    Args:
        model: Any pydantic-ai model or model name; ``None`` means ``claudecode_model.ClaudeCodeModel()``
            (Claude through the Claude Code CLI, where the tools appear as ``mcp__pydantic_tools__tavily_*``).
        deps: The Tavily settings to use when a run passes no ``deps`` of its own; ``None`` means
            ``TavilySearchDeps()`` (the key from ``TAVILY_API_KEY``).
            ``agent.run(..., deps=TavilySearchDeps(...))`` overrides them for one run.
        instructions: The agent's instructions.
        **agent_kwargs: Passed on to ``pydantic_ai.Agent`` (e.g. ``retries``, ``name``, ``model_settings``).

    Example::

        agent = create_research_agent()
        result = await agent.run("What changed in Python 3.14?")
    """
    if model is None:
        # Imported here so the Tavily tools do not load the Claude Code model unless it is asked for.
        model = importlib.import_module("claudecode_model").ClaudeCodeModel()
    default_deps = deps if deps is not None else TavilySearchDeps()

    def tavily_deps(ctx: RunContext[TavilySearchDeps]) -> TavilySearchDeps:
        return ctx.deps if isinstance(ctx.deps, TavilySearchDeps) else default_deps

    return Agent(
        model,
        deps_type=TavilySearchDeps,
        instructions=instructions,
        toolsets=[TavilyToolset[TavilySearchDeps](deps=tavily_deps)],
        **agent_kwargs,
    )
