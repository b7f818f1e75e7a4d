"""A new process's first answer with claudecode-model: what a script, a command or a serverless handler does.

Run by the new-process suite (``bench/_process_suites.py``) in a fresh interpreter per repetition. Reads the CLI
environment from ``BENCH_CLI_ENV`` (JSON) and the prompt from ``BENCH_PROMPT``; prints one JSON line with the
``time.monotonic_ns()`` (CLOCK_MONOTONIC, the parent's clock too) of: imports done, first call started, answer in
hand; this process's CPU seconds until the answer and during the first call (steady where wall time is not); and the
answer.

With ``BENCH_SDK_IN_CALL=1`` the call starts with ``import claude_agent_sdk``: the library then starts the CLI after
the SDK's import, as before the first CLI was started ahead of it (the "sequential" variant of the suite). With
``BENCH_SDK_BEFORE_CALL=1`` the SDK is imported with the others, before the model is made, as a library that
imported it in ``ClaudeCodeModel()`` would (the "eager" variant): the call no longer contains the import, and the
CLI starts after it.
"""

import json
import os
import time

from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel

if os.environ.get("BENCH_SDK_BEFORE_CALL") == "1":
    import claude_agent_sdk
ready = time.monotonic_ns()
model = ClaudeCodeModel(env=json.loads(os.environ["BENCH_CLI_ENV"]))
agent = Agent(model)


@agent.tool_plain
async def probe(n: int) -> str:
    """Returns a probe value for n."""
    return f"p{n}"


call, cpu_call = time.monotonic_ns(), time.process_time()
if os.environ.get("BENCH_SDK_IN_CALL") == "1":
    import claude_agent_sdk  # noqa: F401
output = agent.run_sync(os.environ["BENCH_PROMPT"]).output
answer, cpu = time.monotonic_ns(), time.process_time()
print(
    json.dumps(
        {"ready": ready, "call": call, "answer": answer, "cpu": cpu, "cpu_call": cpu - cpu_call, "text": output}
    ),
    flush=True,
)
