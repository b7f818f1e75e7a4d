"""The offline research demo's stand-ins: canned Tavily results and a scripted Claude that cites them.

``claudecode-model demo --research`` runs the research agent through the real Claude Code CLI with both
services faked on 127.0.0.1: :class:`~claudecode_model.testing.OfflineBackend` answers for Claude with
:func:`research_demo_brain`, and :class:`~claudecode_model.tavily.testing.FakeTavilyServer` answers for Tavily
with :func:`demo_search_results`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from claudecode_model.tavily.testing import generated_search_results

if TYPE_CHECKING:
    from pydantic_ai.models.function import AgentInfo

__all__ = [
    "DEMO_MAX_RESULTS",
    "DEMO_SEARCH_RESULTS",
    "RESEARCH_DEMO_PROMPT",
    "CitedSource",
    "demo_search_results",
    "parse_search_text",
    "research_demo_brain",
]

RESEARCH_DEMO_PROMPT = "How do pydantic-ai agents use tools through Claude Code?"
"""The question the research demo asks when none is given (the one the canned results answer)."""

DEMO_MAX_RESULTS = 3
"""How many results the scripted Claude asks ``tavily_search`` for."""

DEMO_SEARCH_RESULTS: tuple[dict[str, Any], ...] = (
    {
        "title": "Model Context Protocol: Introduction",
        "url": "https://modelcontextprotocol.io/introduction",
        "content": "MCP is an open protocol that standardizes how applications provide tools and context to LLMs.",
        "score": 0.93,
    },
    {
        "title": "Claude Code: Connect Claude Code to tools via MCP",
        "url": "https://docs.anthropic.com/en/docs/claude-code/mcp",
        "content": "Claude Code calls tools served by MCP servers; their names take the form mcp__<server>__<tool>.",
        "score": 0.88,
    },
    {
        "title": "Pydantic AI: Function Tools",
        "url": "https://ai.pydantic.dev/tools/",
        "content": "Function tools let a model call Python functions; Pydantic validates the arguments.",
        "score": 0.81,
    },
)
"""The canned results the Tavily stand-in returns for :data:`RESEARCH_DEMO_PROMPT`."""


def demo_search_results(query: str, max_results: int) -> list[dict[str, Any]]:
    """What the demo's Tavily stand-in finds: the canned results for the demo question, generated ones else."""
    if query.strip() == RESEARCH_DEMO_PROMPT:
        return [dict(result) for result in DEMO_SEARCH_RESULTS[:max_results]]
    return generated_search_results(query, max_results)


@dataclass(frozen=True)
class CitedSource:
    """One result of a ``tavily_search`` tool result, read back from the contract's text format."""

    number: int
    title: str
    url: str
    content: str


_RESULT_RE = re.compile(
    r"^### (?P<number>\d+)\. (?P<title>[^\n]*)\nURL: (?P<url>[^\n]*)\nスコア: [0-9.]+\n(?P<content>.*?)(?=\n\n### |\Z)",
    re.MULTILINE | re.DOTALL,
)


def parse_search_text(text: str) -> list[CitedSource]:
    """The results in a ``tavily_search`` result text (section 2.4 of the contract); none for other text."""
    return [
        CitedSource(int(match["number"]), match["title"], match["url"], match["content"].strip())
        for match in _RESULT_RE.finditer(text)
    ]


def _question(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        for part in reversed(message.parts):
            if isinstance(part, UserPromptPart) and isinstance(part.content, str) and part.content.strip():
                return part.content.strip()
    return RESEARCH_DEMO_PROMPT


def _search_tool(info: AgentInfo) -> str | None:
    for tool in info.function_tools:
        if tool.name == "tavily_search" or tool.name.endswith("__tavily_search"):
            return tool.name
    return None


def _cited_answer(question: str, result: ToolReturnPart) -> str:
    text = result.model_response_str(wrap_if_error=False)
    if result.outcome != "success":
        return f"I could not research {question!r}: the search failed.\n{text}"
    sources = parse_search_text(text)
    if not sources:
        return f"The search found no sources for {question!r}, so I cannot answer it from the web."
    findings = "\n".join(f"- {source.content} [{source.number}]" for source in sources)
    citations = "\n".join(f"[{source.number}] {source.title} - {source.url}" for source in sources)
    return f"What the sources say about {question!r}:\n{findings}\n\nSources:\n{citations}"


def research_demo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted Claude for the offline backend: search once for the question, then answer citing the results.

    The tool is found among the tools of the request (the CLI offers it as ``mcp__pydantic_tools__tavily_search``).
    """
    question = _question(messages)
    last = messages[-1] if messages else None
    returns = (
        [part for part in last.parts if isinstance(part, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    )
    if returns:
        return ModelResponse(parts=[TextPart(_cited_answer(question, returns[-1]))])
    tool = _search_tool(info)
    if tool is None:
        return ModelResponse(parts=[TextPart("I have no search tool, so I cannot research this.")])
    call = ToolCallPart(tool, {"query": question, "max_results": DEMO_MAX_RESULTS})
    return ModelResponse(parts=[TextPart("Let me search the web."), call])
