"""Issue 4, faithful results: Claude gets exactly the tool's text, and a tool exception as an error result.

Both servers are driven through the SDK's own in-process bridge (``SdkMcpBridge``), as in a CLI session.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent, ModelRetry

from claudecode_model._tools.core import ToolSpec
from claudecode_model._tools.inprocess_server import build_inprocess_server
from claudecode_model.exceptions import ToolValidationError
from claudecode_model.ipc._constants import TOOL_USE_ID_META_KEY
from claudecode_model.mcp_integration import create_mcp_server_from_tools
from tests._support.agents import echo_and_explode_agent
from tests._support.mcp import mcp_session, texts

if TYPE_CHECKING:
    from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge

    from claudecode_model.tool_converter import McpResponse

EXACT_TEXTS = [
    '{"result": "looks like JSON but is a string"}',
    "line one\n  line two with trailing spaces   \n",
    "Zürich — 東京 — emoji 🚀",
    "",
    "42",
]


def text_agent() -> Agent[None, str]:
    agent = echo_and_explode_agent(ValueError)

    @agent.tool_plain
    def retry(hint: str) -> str:
        raise ModelRetry(f"Try again: {hint}")

    return agent


async def test_string_results_reach_claude_exactly_through_the_sdk_server() -> None:
    server = create_mcp_server_from_tools(text_agent()._function_toolset)

    async with mcp_session(server) as session:
        for text in EXACT_TEXTS:
            result = await session.call_tool("echo", {"text": text})
            assert result == {"content": [{"type": "text", "text": text}], "isError": False}


async def test_tool_exception_reaches_claude_as_error_result_with_its_message() -> None:
    server = create_mcp_server_from_tools(text_agent()._function_toolset)

    async with mcp_session(server) as session:
        failed = await session.call_tool("explode", {"message": "the disk is full"})
        retried = await session.call_tool("retry", {"hint": "use a smaller number"})

    assert failed == {"content": [{"type": "text", "text": "the disk is full"}], "isError": True}
    assert retried == {
        "content": [{"type": "text", "text": "Try again: use a smaller number"}],
        "isError": True,
    }


async def test_schema_violations_are_reported_to_claude_as_error_results() -> None:
    server = create_mcp_server_from_tools(text_agent()._function_toolset)

    async with mcp_session(server) as session:
        result = await session.call_tool("echo", {"text": 3})

    assert result["isError"] is True
    assert "3 is not of type 'string'" in texts(result)[0]


# --- the low-level server (build_inprocess_server) ----------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], str | None]] = []

    async def echo(self, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        self.calls.append((arguments, tool_use_id))
        return {"content": [{"type": "text", "text": arguments["text"]}], "isError": False}

    async def fail(self, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        raise RuntimeError(f"broken for {tool_use_id}")

    async def refuse(self, arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        return {
            "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "never"}],
            "isError": True,
        }


SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def low_level_server(recorder: Recorder) -> Any:
    return build_inprocess_server(
        "agent_tools",
        [
            ToolSpec("echo", "Echo a text.", SCHEMA, recorder.echo, read_only=True),
            ToolSpec("fail", "Always fails.", {"type": "object"}, recorder.fail),
            ToolSpec("refuse", "Returns an error result.", {"type": "object", "properties": {}}, recorder.refuse),
        ],
    )


async def test_low_level_server_lists_tools_with_read_only_hints() -> None:
    config = low_level_server(Recorder())

    assert config["type"] == "sdk"
    assert config["name"] == "agent_tools"
    async with mcp_session(config) as session:
        listed = {tool["name"]: tool for tool in await session.list_tools()}

    assert listed["echo"] == {
        "name": "echo",
        "description": "Echo a text.",
        "inputSchema": SCHEMA,
        "annotations": {"readOnlyHint": True},
        # Claude Code shows results up to 500,000 characters inline (its default is 50,000).
        "_meta": {"anthropic/maxResultSizeChars": 500_000},
    }
    assert "annotations" not in listed["fail"]
    assert listed["fail"]["inputSchema"] == {"type": "object", "properties": {}}


async def test_low_level_server_passes_the_tool_use_id_and_returns_exact_text() -> None:
    recorder = Recorder()

    async with mcp_session(low_level_server(recorder)) as session:
        results = [
            await session.call_tool("echo", {"text": t}, tool_use_id=f"toolu_{i}") for i, t in enumerate(EXACT_TEXTS)
        ]
        anonymous = await session.call_tool("echo", {"text": "no id"})

    assert [texts(r) for r in results] == [[t] for t in EXACT_TEXTS]
    assert all(r["isError"] is False for r in results)
    assert [call[1] for call in recorder.calls] == [*(f"toolu_{i}" for i in range(len(EXACT_TEXTS))), None]
    assert recorder.calls[0][0] == {"text": EXACT_TEXTS[0]}
    assert texts(anonymous) == ["no id"]
    assert TOOL_USE_ID_META_KEY == "claudecode/toolUseId"


async def test_low_level_server_turns_handler_exceptions_into_error_results(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with mcp_session(low_level_server(Recorder())) as session:
        with caplog.at_level(logging.WARNING, logger="claudecode_model._tools.inprocess_server"):
            failed = await session.call_tool("fail", {}, tool_use_id="toolu_9")
        refused = await session.call_tool("refuse", {})
        unknown = await session.call_tool("nope", {})

    assert failed == {"content": [{"type": "text", "text": "broken for toolu_9"}], "isError": True}
    assert any("'fail'" in r.getMessage() for r in caplog.records)
    assert refused == {
        "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "never"}],
        "isError": True,
    }
    assert unknown["isError"] is True
    assert texts(unknown) == ["Unknown tool 'nope'. Available tools: echo, fail, refuse."]


async def test_low_level_server_runs_calls_concurrently() -> None:
    arrived: dict[str, asyncio.Event] = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def meet(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        me, other = arguments["me"], arguments["other"]
        arrived[me].set()
        await arrived[other].wait()  # only returns if the other call runs at the same time
        return {"content": [{"type": "text", "text": me}], "isError": False}

    config = build_inprocess_server("par", [ToolSpec("meet", "", {"type": "object", "properties": {}}, meet, True)])
    async with (
        mcp_session(config) as session,
        asyncio.timeout(30),
    ):  # a guard against a hang, not a timing check
        first, second = await asyncio.gather(
            session.call_tool("meet", {"me": "a", "other": "b"}),
            session.call_tool("meet", {"me": "b", "other": "a"}),
        )

    assert (texts(first), texts(second)) == (["a"], ["b"])


async def test_low_level_server_lets_cancellation_reach_the_handler() -> None:
    started = asyncio.Event()
    outcome: list[str] = []

    async def wait_forever(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return {"content": [], "isError": False}

    config = build_inprocess_server("c", [ToolSpec("wait", "", {"type": "object", "properties": {}}, wait_forever)])
    async with mcp_session(config) as session:
        bridge: SdkMcpBridge = session._bridge
        call = asyncio.create_task(
            bridge.handle({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "wait"}})
        )
        await started.wait()
        await bridge.handle(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 99, "reason": "stop"},
            }
        )
        response = await call

    assert outcome == ["cancelled"]
    assert response is not None
    assert "result" not in response
    assert response["error"]["message"] == "Request cancelled"


@pytest.mark.parametrize(
    ("name", "tools", "match"),
    [
        ("", [], "server name"),
        ("s", [ToolSpec("", "", {}, Recorder().echo)], "non-empty"),
        ("s", [ToolSpec("x", "", {}, Recorder().echo), ToolSpec("x", "", {}, Recorder().fail)], "Two tools"),
    ],
)
def test_low_level_server_validates_names(name: str, tools: list[ToolSpec], match: str) -> None:
    with pytest.raises(ToolValidationError, match=match):
        build_inprocess_server(name, tools)


async def test_sessions_leave_no_tasks_behind() -> None:
    before = asyncio.all_tasks()
    async with mcp_session(low_level_server(Recorder())) as session:
        await session.call_tool("echo", {"text": "x"})
    async with mcp_session(create_mcp_server_from_tools(text_agent()._function_toolset)) as session:
        await session.call_tool("echo", {"text": "x"})
    await asyncio.sleep(0)

    assert asyncio.all_tasks() == before
