"""One round of the mix suite with claudecode-model: one program that runs five steps, as an application would.

(a) a tool agent's run (one tool call; the program's first request), (b) a text agent's run (no tools, another system
prompt, the same model), (c) a follow-up of (b)'s conversation, the latest (``message_history``), (d) a new conversation
of the tool agent, (e) a brand-new ``ClaudeCodeModel`` running the tool agent (made inside the step). The program pauses
``BENCH_MIX_PAUSE`` seconds after each step, as a program between requests does. Run by ``bench/_mix_suites.py`` in a
fresh interpreter per round; reads the CLI environment (``BENCH_CLI_ENV``), the prompts (``BENCH_MIX_PROMPTS``) and the
system prompts (``BENCH_TOOL_SYSTEM``, ``BENCH_TEXT_SYSTEM``); prints one JSON line: per step its
``time.monotonic_ns()`` start, end and end of the pause after it, the answer, and where the library says the CLI session
came from.
"""

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.messages import ModelResponse

from claudecode_model import ClaudeCodeModel

ENV = json.loads(os.environ["BENCH_CLI_ENV"])
PROMPTS = json.loads(os.environ["BENCH_MIX_PROMPTS"])
PAUSE = float(os.environ["BENCH_MIX_PAUSE"])
ready = time.monotonic_ns()


def tool_agent(model: ClaudeCodeModel) -> Agent[None, str]:
    agent = Agent(model, system_prompt=os.environ["BENCH_TOOL_SYSTEM"])

    @agent.tool_plain
    async def probe(n: int) -> str:
        """Returns a probe value for n."""
        return f"p{n}"

    return agent


def source(result: AgentRunResult[str]) -> Any:
    last = result.all_messages()[-1]
    return (last.provider_details or {}).get("session_source") if isinstance(last, ModelResponse) else None


async def main() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []

    async def step(name: str, run: Callable[[], Awaitable[AgentRunResult[str]]]) -> AgentRunResult[str]:
        start = time.monotonic_ns()
        result = await run()
        end = time.monotonic_ns()
        await asyncio.sleep(PAUSE)
        steps.append(
            {
                "name": name,
                "start": start,
                "end": end,
                "idle_end": time.monotonic_ns(),
                "text": result.output,
                "source": source(result),
            }
        )
        return result

    model = ClaudeCodeModel(env=ENV)
    tools = tool_agent(model)
    text = Agent(model, system_prompt=os.environ["BENCH_TEXT_SYSTEM"])
    await step("tool", lambda: tools.run(PROMPTS["tool"]))
    second = await step("text", lambda: text.run(PROMPTS["text"]))
    await step("follow_up", lambda: text.run(PROMPTS["follow_up"], message_history=second.all_messages()))
    await step("new_conversation", lambda: tools.run(PROMPTS["new_conversation"]))
    models = [model]

    async def brand_new() -> AgentRunResult[str]:
        models.append(ClaudeCodeModel(env=ENV))
        return await tool_agent(models[-1]).run(PROMPTS["new_model"])

    await step("new_model", brand_new)
    await asyncio.gather(*(each.aclose() for each in models))
    return steps


print(json.dumps({"ready": ready, "steps": asyncio.run(main())}), flush=True)
