"""``claudecode-model demo --research`` and ``run --research``.

The demo runs the research agent through the real CLI with Claude (offline backend) and Tavily
(``FakeTavilyServer``) both on 127.0.0.1; its scripted Claude is tested on its own first.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from claudecode_model import cli
from claudecode_model.model import ClaudeCodeModel
from claudecode_model.tavily import RESEARCH_INSTRUCTIONS
from claudecode_model.tavily._demo import (
    DEMO_SEARCH_RESULTS,
    RESEARCH_DEMO_PROMPT,
    CitedSource,
    demo_search_results,
    parse_search_text,
    research_demo_brain,
)
from claudecode_model.tavily._format import format_search
from claudecode_model.tavily._models import SearchResult
from claudecode_model.tavily.testing import generated_search_results
from tests._support.processes import environ, process_table
from tests._support.subprocesses import run_python

DEMO_ANSWER = f"""\
Answer:
What the sources say about {RESEARCH_DEMO_PROMPT!r}:
- MCP is an open protocol that standardizes how applications provide tools and context to LLMs. [1]
- Claude Code calls tools served by MCP servers; their names take the form mcp__<server>__<tool>. [2]
- Function tools let a model call Python functions; Pydantic validates the arguments. [3]

Sources:
[1] Model Context Protocol: Introduction - https://modelcontextprotocol.io/introduction
[2] Claude Code: Connect Claude Code to tools via MCP - https://docs.anthropic.com/en/docs/claude-code/mcp
[3] Pydantic AI: Function Tools - https://ai.pydantic.dev/tools/
"""


def agent_info(*tool_names: str) -> AgentInfo:
    tools = [
        ToolDefinition(name=name, parameters_json_schema={"type": "object", "properties": {}}) for name in tool_names
    ]
    return AgentInfo(
        function_tools=tools,
        allow_text_output=True,
        output_tools=[],
        model_settings=None,
        model_request_parameters=ModelRequestParameters(function_tools=tools, allow_text_output=True),
        instructions=None,
    )


def search_return(text: str, outcome: Any = "success") -> list[ModelMessage]:
    return [
        ModelRequest.user_text_prompt("What is MCP?"),
        ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__tavily_search", {"query": "What is MCP?"}, "c1")]),
        ModelRequest(
            parts=[
                ToolReturnPart("mcp__pydantic_tools__tavily_search", text, tool_call_id="c1", outcome=outcome),
            ]
        ),
    ]


# --- the scripted Claude and the canned results ----------------------------------------------------------


def test_brain_first_searches_with_the_tool_the_request_offers() -> None:
    info = agent_info("mcp__pydantic_tools__tavily_context", "mcp__pydantic_tools__tavily_search")
    response = research_demo_brain([ModelRequest.user_text_prompt("  What is MCP? ")], info)
    [text, call] = response.parts
    assert isinstance(text, TextPart)
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args) == (
        "mcp__pydantic_tools__tavily_search",
        {"query": "What is MCP?", "max_results": 3},
    )


def test_brain_also_works_with_the_plain_tool_name() -> None:
    response = research_demo_brain([ModelRequest.user_text_prompt("q")], agent_info("tavily_search"))
    assert [part.tool_name for part in response.parts if isinstance(part, ToolCallPart)] == ["tavily_search"]


def test_brain_without_a_search_tool_says_so() -> None:
    response = research_demo_brain([ModelRequest.user_text_prompt("q")], agent_info("other"))
    assert response.parts == [TextPart("I have no search tool, so I cannot research this.")]


def test_brain_answers_citing_every_result() -> None:
    results = [SearchResult(**result) for result in DEMO_SEARCH_RESULTS[:2]]
    response = research_demo_brain(search_return(format_search("What is MCP?", results)), agent_info())
    assert response.parts == [
        TextPart(
            "What the sources say about 'What is MCP?':\n"
            f"- {results[0].content} [1]\n- {results[1].content} [2]\n\n"
            f"Sources:\n[1] {results[0].title} - {results[0].url}\n[2] {results[1].title} - {results[1].url}"
        )
    ]


def test_brain_reports_a_failed_search() -> None:
    error = "Tavily API エラー: rate limit exceeded (HTTP 429)\nエラータイプ: RATE_LIMIT_ERROR"
    response = research_demo_brain(search_return(error, outcome="failed"), agent_info())
    assert response.parts == [TextPart(f"I could not research 'What is MCP?': the search failed.\n{error}")]


def test_brain_admits_when_nothing_was_found() -> None:
    response = research_demo_brain(search_return(format_search("What is MCP?", [])), agent_info())
    assert response.parts == [
        TextPart("The search found no sources for 'What is MCP?', so I cannot answer it from the web.")
    ]


def test_search_text_parses_back_into_its_sources() -> None:
    results = [
        SearchResult("Title one", "https://a.example/1", "First line.\nSecond line.", 0.5),
        SearchResult("Title ### two", "https://b.example/2", "Content two.", 0.25),
    ]
    assert parse_search_text(format_search("q", results)) == [
        CitedSource(1, "Title one", "https://a.example/1", "First line.\nSecond line."),
        CitedSource(2, "Title ### two", "https://b.example/2", "Content two."),
    ]
    assert parse_search_text("Tavily API エラー: boom\nエラータイプ: UNKNOWN_ERROR") == []


def test_demo_question_gets_the_canned_results_and_others_generated_ones() -> None:
    assert demo_search_results(RESEARCH_DEMO_PROMPT, 2) == [dict(result) for result in DEMO_SEARCH_RESULTS[:2]]
    assert demo_search_results("other question", 2) == generated_search_results("other question", 2)


# --- run --research (real Tavily: only what happens before anything starts) ------------------------------


def test_run_research_without_a_key_fails_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--research", "What is new?"]) == 1
    assert capsys.readouterr().err == "error: --research needs a Tavily API key in TAVILY_API_KEY\n"


def test_run_research_offline_points_to_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--research", "--offline", "What is new?"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --research uses the real Tavily API, which --offline does not fake")
    assert "claudecode-model demo --research" in err


@pytest.mark.parametrize(
    ("argv", "tools", "instructions"),
    [
        (["--research"], ["tavily_context", "tavily_extract", "tavily_search"], RESEARCH_INSTRUCTIONS),
        (["--research", "--instructions", "Cite."], ["tavily_context", "tavily_extract", "tavily_search"], "Cite."),
        (["--instructions", "Be brief."], [], "Be brief."),
    ],
)
async def test_run_builds_the_research_agent_when_asked(argv: list[str], tools: list[str], instructions: str) -> None:
    seen: dict[str, Any] = {}

    # Async, so pydantic-ai runs it on the loop: a sync function would leave an idle AnyIO worker thread behind.
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update(tools=sorted(tool.name for tool in info.function_tools), instructions=info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    agent = cli._agent(cli._parser().parse_args(["run", *argv, "q"]), ClaudeCodeModel())
    with agent.override(model=FunctionModel(respond)):
        assert (await agent.run("q")).output == "ok"
    assert seen == {"tools": tools, "instructions": instructions}


# --- the demo through the real CLI -----------------------------------------------------------------------


def processes_with_env(marker: str) -> list[int]:
    """Live processes whose environment carries ``marker`` (the demo's descendants inherit it)."""
    name, value = marker.split("=", 1)
    found: list[int] = []
    for process in process_table():
        try:
            carries_marker = environ(process.pid).get(name) == value
        except OSError:
            continue
        if carries_marker and process.alive:
            found.append(process.pid)
    return found


@pytest.mark.cli
def test_demo_research_command_prints_a_cited_answer() -> None:
    marker = f"CLAUDECODE_MODEL_DEMO_TEST={uuid.uuid4().hex}"
    name, value = marker.split("=", 1)
    completed = run_python("-m", "claudecode_model.cli", "demo", "--research", env={name: value}, timeout=90)

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("Claude Code CLI: ")
    assert lines[1].startswith("Offline backend: http://127.0.0.1:")
    assert lines[1].endswith("(2 API request(s) received)")
    assert lines[2].startswith("Tavily stand-in: http://127.0.0.1:")
    assert lines[2].endswith("(1 request(s) received)")
    assert lines[3] == f"Question: {RESEARCH_DEMO_PROMPT}"
    assert lines[4] == f'Tool call: tavily_search {{"query": "{RESEARCH_DEMO_PROMPT}", "max_results": 3}}'
    assert "\n".join(lines[5:-1]) + "\n" == DEMO_ANSWER
    assert lines[-1].startswith("Usage: ")
    assert processes_with_env(marker) == [], "the demo left processes behind"


@pytest.mark.cli
def test_demo_research_answers_any_question_offline(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--research", "Which Python is newest?"]) == 0
    out = capsys.readouterr().out
    assert "Question: Which Python is newest?\n" in out
    assert "- Summary 1 about Which Python is newest?. [1]\n" in out
    assert "[3] Which Python is newest? - source 3 - https://example.com/which-python-is-newest/3\n" in out


@pytest.mark.cli
def test_plain_demo_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert f"Prompt: {cli.DEMO_PROMPT}\n" in out
    assert "Answer: claudecode-model lets a pydantic-ai agent run on Claude" in out
    assert "Tavily" not in out
