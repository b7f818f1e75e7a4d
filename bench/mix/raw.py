"""One round of the mix suite with the raw claude-agent-sdk: the same five steps as ``ours.py``, with
``ClaudeSDKClient``s as a careful user writes them.

Each conversation is one client: (a) connects a client with the tool (an in-process ``create_sdk_mcp_server``
server) and the tool agent's system prompt, (b) a client without tools and the text agent's system prompt, (c) the
next query on (b)'s client, (d) and (e) a new client each. A client is closed (``disconnect()``, after the step's
answer, not timed) as soon as its conversation has no more steps: (a)'s, (d)'s and (e)'s after their answer, (b)'s
after the follow-up. So the program holds one CLI per open conversation. Same protocol as ``ours.py``.
"""

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, create_sdk_mcp_server, tool

ENV = json.loads(os.environ["BENCH_CLI_ENV"])
PROMPTS = json.loads(os.environ["BENCH_MIX_PROMPTS"])
PAUSE = float(os.environ["BENCH_MIX_PAUSE"])
ready = time.monotonic_ns()


@tool("probe", "Returns a probe value for n.", {"n": int})
async def probe(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"p{args['n']}"}]}


def options(system_prompt: str, *, with_tool: bool) -> ClaudeAgentOptions:
    servers: dict[str, Any] = {"bench": create_sdk_mcp_server("bench", tools=[probe])} if with_tool else {}
    return ClaudeAgentOptions(
        system_prompt=system_prompt,
        tools=[],
        mcp_servers=servers,
        allowed_tools=["mcp__bench"] if with_tool else [],
        permission_mode="dontAsk",
        setting_sources=[],
        strict_mcp_config=True,
        env=ENV,
    )


async def connected(system_prompt: str, *, with_tool: bool) -> ClaudeSDKClient:
    client = ClaudeSDKClient(options(system_prompt, with_tool=with_tool))
    await client.connect()
    return client


async def ask(client: ClaudeSDKClient, prompt: str) -> str:
    await client.query(prompt)
    async for message in client.receive_response():
        if isinstance(message, ResultMessage):
            return str(message.result)
    raise RuntimeError("the SDK ended the turn without a ResultMessage")


async def main() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    tool_system, text_system = os.environ["BENCH_TOOL_SYSTEM"], os.environ["BENCH_TEXT_SYSTEM"]

    async def step(
        name: str, run: Callable[[], Awaitable[tuple[ClaudeSDKClient, str]]], *, done: bool
    ) -> ClaudeSDKClient:
        start = time.monotonic_ns()
        client, text = await run()
        end = time.monotonic_ns()
        if done:  # this conversation has no more steps: a careful user closes its client
            await client.disconnect()
        await asyncio.sleep(PAUSE)
        steps.append({"name": name, "start": start, "end": end, "idle_end": time.monotonic_ns(), "text": text})
        return client

    async def new_conversation(prompt: str, system_prompt: str, with_tool: bool) -> tuple[ClaudeSDKClient, str]:
        client = await connected(system_prompt, with_tool=with_tool)
        return client, await ask(client, prompt)

    async def follow_up(client: ClaudeSDKClient, prompt: str) -> tuple[ClaudeSDKClient, str]:
        return client, await ask(client, prompt)

    await step("tool", lambda: new_conversation(PROMPTS["tool"], tool_system, True), done=True)
    second = await step("text", lambda: new_conversation(PROMPTS["text"], text_system, False), done=False)
    await step("follow_up", lambda: follow_up(second, PROMPTS["follow_up"]), done=True)
    await step("new_conversation", lambda: new_conversation(PROMPTS["new_conversation"], tool_system, True), done=True)
    await step("new_model", lambda: new_conversation(PROMPTS["new_model"], tool_system, True), done=True)
    return steps


print(json.dumps({"ready": ready, "steps": asyncio.run(main())}), flush=True)
