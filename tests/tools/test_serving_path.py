"""Registered tools and the agent's own tools are served by one code path on both transports.

The same tool specs are served in-process (``"sdk"``) and over the IPC bridge's session (``"stdio"``); every call
must come back the same: results, error results carrying the exception's message, schema violations, and the
``tool_use`` id reaching the tool.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel

from claudecode_model._tools.core import TOOL_USE_ID_META_KEY, run_tool_call, tool_spec
from claudecode_model._tools.servers import registered_tool_specs, serve_tools
from claudecode_model.deps_support import DepsContext
from claudecode_model.ipc import IPCClient
from claudecode_model.mcp_integration import collect_tools, create_mcp_server_from_tools
from tests._support.agents import echo_and_explode_agent
from tests._support.mcp import mcp_session


def registered_agent() -> Agent[None, str]:
    agent = echo_and_explode_agent(RuntimeError)

    @agent.tool_plain
    def add(x: int, y: int) -> dict[str, int]:
        return {"sum": x + y}

    return agent


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "héllo \n world"}),
    ("explode", {"message": "the disk is full"}),
    ("add", {"x": 2, "y": 40}),
    ("echo", {"text": 3}),  # violates the schema
    ("nope", {}),  # no such tool
]


async def test_registered_tools_answer_the_same_over_both_transports() -> None:
    tools = collect_tools(registered_agent()._function_toolset)
    in_process = await serve_tools("pydantic_tools", registered_tool_specs(tools), "sdk")
    over_ipc = await serve_tools("pydantic_tools", registered_tool_specs(tools), "stdio")
    assert over_ipc.ipc is not None
    try:
        async with mcp_session(in_process.config) as session:  # type: ignore[arg-type]
            sdk_results = [await session.call_tool(name, arguments) for name, arguments in CALLS[:-1]]
        client = await IPCClient.connect(over_ipc.ipc.socket_path, over_ipc.ipc.secret)
        async with client:
            ipc_results = [await client.call_tool(name, arguments) for name, arguments in CALLS[:-1]]
    finally:
        await over_ipc.stop()

    assert ipc_results == sdk_results
    assert sdk_results[0] == {"content": [{"type": "text", "text": "héllo \n world"}], "isError": False}
    assert sdk_results[1] == {"content": [{"type": "text", "text": "the disk is full"}], "isError": True}
    assert sdk_results[2]["content"][0]["text"] == '{"sum":42}'
    assert sdk_results[3]["isError"] is True
    assert "3 is not of type 'string'" in sdk_results[3]["content"][0]["text"]


async def test_the_sdk_helper_and_the_model_path_serve_the_same_specs() -> None:
    agent = registered_agent()
    helper = create_mcp_server_from_tools(agent._function_toolset)
    served = await serve_tools("pydantic_tools", registered_tool_specs(collect_tools(agent._function_toolset)), "sdk")

    async with mcp_session(helper) as first, mcp_session(served.config) as second:  # type: ignore[arg-type]
        assert await first.list_tools() == await second.list_tools()
        for name, arguments in CALLS:
            assert await first.call_tool(name, arguments) == await second.call_tool(name, arguments)


async def test_the_tool_use_id_reaches_a_tool_that_takes_a_context_on_both_transports() -> None:
    agent: Agent[dict[str, str], str] = Agent(TestModel(), deps_type=dict)

    @agent.tool
    def whoami(ctx: RunContext[dict[str, str]], greeting: str) -> str:
        return f"{greeting} {ctx.deps['name']} from {ctx.tool_call_id}"

    config = create_mcp_server_from_tools(agent._function_toolset, deps={"name": "Ada"})
    async with mcp_session(config) as session:
        in_process = await session.call_tool("whoami", {"greeting": "hi"}, tool_use_id="toolu_1")

    whoami_spec = tool_spec(agent._function_toolset.tools["whoami"], deps_context=DepsContext({"name": "Ada"}))
    over_ipc = await serve_tools("pydantic_tools", [whoami_spec], "stdio")
    assert over_ipc.ipc is not None
    try:
        client = await IPCClient.connect(over_ipc.ipc.socket_path, over_ipc.ipc.secret)
        async with client:
            bridged = await client.call_tool("whoami", {"greeting": "hi"}, {TOOL_USE_ID_META_KEY: "toolu_1"})
    finally:
        await over_ipc.stop()

    assert in_process == {"content": [{"type": "text", "text": "hi Ada from toolu_1"}], "isError": False}
    assert bridged == in_process
    assert await run_tool_call(whoami_spec, {"greeting": "yo"}, None) == {
        "content": [{"type": "text", "text": "yo Ada from None"}],
        "isError": False,
    }
