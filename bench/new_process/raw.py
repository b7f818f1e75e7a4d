"""A new process's first answer with the raw claude-agent-sdk: ``query()`` with an in-process MCP tool.

The options a careful user would write (the same as the in-process suites' raw side, ``bench/_raw.py``). Same
protocol as ``ours.py``.
"""

import asyncio
import json
import os
import time
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, create_sdk_mcp_server, query, tool

ready = time.monotonic_ns()


@tool("probe", "Returns a probe value for n.", {"n": int})
async def probe(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"p{args['n']}"}]}


options = ClaudeAgentOptions(
    tools=[],
    mcp_servers={"bench": create_sdk_mcp_server("bench", tools=[probe])},
    allowed_tools=["mcp__bench"],
    permission_mode="dontAsk",
    setting_sources=[],
    strict_mcp_config=True,
    env=json.loads(os.environ["BENCH_CLI_ENV"]),
)


async def first_answer() -> tuple[str, int, float]:
    """The answer, when it was in hand and the CPU used until then (the messages after it, up to the CLI's exit,
    are not counted)."""
    found: tuple[str, int, float] | None = None
    async for message in query(prompt=os.environ["BENCH_PROMPT"], options=options):
        if isinstance(message, ResultMessage) and found is None:
            found = str(message.result), time.monotonic_ns(), time.process_time()
    if found is None:
        raise RuntimeError("query() ended without a ResultMessage")
    return found


call, cpu_call = time.monotonic_ns(), time.process_time()
text, answer, cpu = asyncio.run(first_answer())
report = {"ready": ready, "call": call, "answer": answer, "cpu": cpu, "cpu_call": cpu - cpu_call, "text": text}
print(json.dumps(report), flush=True)
