"""One round of the sync suite with the raw claude-agent-sdk: the same synchronous program as ``ours.py``, each new
conversation one ``asyncio.run()`` of a ``ClaudeSDKClient`` (connect, query, disconnect) with the tool as an
in-process ``create_sdk_mcp_server`` server, as a synchronous program written on the SDK does. The call is timed
whole, the client's disconnect included: a synchronous caller waits for it. Same protocol as ``ours.py``.
"""

import asyncio
import json
import os
import time
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, create_sdk_mcp_server, tool

ENV = json.loads(os.environ["BENCH_CLI_ENV"])
PROMPTS = json.loads(os.environ["BENCH_SYNC_PROMPTS"])
PAUSE = float(os.environ["BENCH_SYNC_PAUSE"])


@tool("probe", "Returns a probe value for n.", {"n": int})
async def probe(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"p{args['n']}"}]}


OPTIONS = ClaudeAgentOptions(
    system_prompt=os.environ["BENCH_TOOL_SYSTEM"],
    tools=[],
    mcp_servers={"bench": create_sdk_mcp_server("bench", tools=[probe])},
    allowed_tools=["mcp__bench"],
    permission_mode="dontAsk",
    setting_sources=[],
    strict_mcp_config=True,
    env=ENV,
)


async def conversation(prompt: str) -> str:
    client = ClaudeSDKClient(OPTIONS)
    await client.connect()
    try:
        await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                return str(message.result)
        raise RuntimeError("the SDK ended the turn without a ResultMessage")
    finally:
        await client.disconnect()


calls: list[dict[str, Any]] = []
for prompt in PROMPTS:
    start = time.monotonic_ns()
    text = asyncio.run(conversation(prompt))
    calls.append({"start": start, "end": time.monotonic_ns(), "text": text, "source": None})
    time.sleep(PAUSE)
print(json.dumps({"calls": calls}), flush=True)
