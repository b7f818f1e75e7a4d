"""One round of the sync suite with claudecode-model: a synchronous program that answers new conversations with
``agent.run_sync()``, one after another with a pause between them, as a script or a synchronous web handler does.

Run by ``bench/_sync_suites.py`` in a fresh interpreter per round. Reads the CLI environment (``BENCH_CLI_ENV``), the
prompts, one per new conversation (``BENCH_SYNC_PROMPTS``), the pause after each call (``BENCH_SYNC_PAUSE``), the tool
agent's system prompt (``BENCH_TOOL_SYSTEM``) and ``BENCH_SYNC_SPARES`` (a number: the model's ``spare_sessions``;
unset: the library's default). Prints one JSON line: per call its ``time.monotonic_ns()`` start and end, the answer,
and where the library says the CLI session came from.
"""

import json
import os
import time
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse

from claudecode_model import ClaudeCodeModel

ENV = json.loads(os.environ["BENCH_CLI_ENV"])
PROMPTS = json.loads(os.environ["BENCH_SYNC_PROMPTS"])
PAUSE = float(os.environ["BENCH_SYNC_PAUSE"])
SPARES = os.environ.get("BENCH_SYNC_SPARES")

model = ClaudeCodeModel(env=ENV, **({"spare_sessions": int(SPARES)} if SPARES else {}))
agent = Agent(model, system_prompt=os.environ["BENCH_TOOL_SYSTEM"])


@agent.tool_plain
async def probe(n: int) -> str:
    """Returns a probe value for n."""
    return f"p{n}"


calls: list[dict[str, Any]] = []
for prompt in PROMPTS:
    start = time.monotonic_ns()
    result = agent.run_sync(prompt)
    end = time.monotonic_ns()
    last = result.all_messages()[-1]
    source = (last.provider_details or {}).get("session_source") if isinstance(last, ModelResponse) else None
    calls.append({"start": start, "end": end, "text": result.output, "source": source})
    time.sleep(PAUSE)
model.close()
print(json.dumps({"calls": calls}), flush=True)
