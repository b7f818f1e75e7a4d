"""The floor of a new process running this library, without the library: ``from pydantic_ai import Agent`` (the
user's own framework), the first run of the same one-tool agent on a ``FunctionModel`` (pydantic-ai's own first-use
work, no CLI), then ``import claude_agent_sdk`` (which this library imports at its first request). Prints the
``time.monotonic_ns()`` after each step and the CPU seconds of the whole (see ``ours.py``)."""

import json
import time

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

ready = time.monotonic_ns()


def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What the offline backend's benchmark brain answers to ``calls=1``: one tool call, then the result."""
    results = [
        str(part.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart)
    ]
    if not results:
        return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {"n": 0})])
    return ModelResponse(parts=[TextPart(f"done -: {' '.join(results)}")])


agent = Agent(FunctionModel(brain))


@agent.tool_plain
async def probe(n: int) -> str:
    """Returns a probe value for n."""
    return f"p{n}"


call = time.monotonic_ns()
output = agent.run_sync("calls=1 id=-").output
framework_run = time.monotonic_ns()
assert output == "done -: p0", output
sdk_start = time.monotonic_ns()

import claude_agent_sdk  # noqa: E402, F401

sdk = time.monotonic_ns()
report = {"ready": ready, "first_run": framework_run - call, "sdk_import": sdk - sdk_start, "cpu": time.process_time()}
print(json.dumps(report), flush=True)
