"""Agents for tests: tools that answer with a fixed text, echo, raise or probe; a tool that asks for a retry."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai import Agent, AgentRunResult, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from tests._support.brains import tool_returns

if TYPE_CHECKING:
    from claudecode_model import ClaudeCodeModel
    from claudecode_model.testing import OfflineBackend


_T = TypeVar("_T")


def agent_with_probe(
    model: ClaudeCodeModel, observe: Callable[[], _T], instructions: str = "Be brief."
) -> tuple[Agent[None, str], list[_T]]:
    """An agent with one tool, ``probe``, that records what ``observe()`` says each time it runs."""
    agent = Agent(model, instructions=instructions)
    seen: list[_T] = []

    @agent.tool_plain
    async def probe() -> str:
        """Report."""
        seen.append(observe())
        return "p"

    return agent, seen


def _answering(text: str) -> Callable[[], str]:
    def tool() -> str:
        return text

    return tool


def add_constant_tools(agent: Agent[Any, Any], **answers: str) -> None:
    """Give ``agent`` one argument-less tool per keyword, named after it, that returns its value."""
    for name, text in answers.items():
        agent.tool_plain(name=name)(_answering(text))


async def square_after_a_retry(model: ClaudeCodeModel, backend: OfflineBackend) -> AgentRunResult[str]:
    """A run whose tool ``square(n)`` answers ``n * n`` but asks for a retry (``ModelRetry("n must be positive")``)
    for a negative ``n``. Claude (``backend``'s brain) calls it with -3, then with 3, then answers with the last
    result: the run answers ``done: 9`` and the tool ran for both."""

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = tool_returns(*messages)
        if len(results) < 2:
            return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {"n": 3 if results else -3})])
        return ModelResponse(parts=[TextPart(f"done: {results[-1].content}")])

    backend.set_brain(FunctionModel(brain))
    agent = Agent(model)
    attempts: list[int] = []

    @agent.tool_plain(retries=2)
    def square(n: int) -> int:
        attempts.append(n)
        if n < 0:
            raise ModelRetry("n must be positive")
        return n * n

    result = await agent.run("square it")
    assert result.output == "done: 9"
    assert attempts == [-3, 3]
    return result


def echo_and_explode_agent(error: type[Exception]) -> Agent[None, str]:
    """A ``TestModel`` agent with ``echo(text)``, which returns its text, and ``explode(message)``, which raises
    ``error(message)``."""
    agent = Agent(TestModel())

    @agent.tool_plain
    def echo(text: str) -> str:
        return text

    @agent.tool_plain
    def explode(message: str) -> str:
        raise error(message)

    return agent


async def run_and_close(model: ClaudeCodeModel, prompt: str, **run_kwargs: Any) -> AgentRunResult[str]:
    """One run of a plain agent on ``model`` (as in a process of its own), closing the model afterwards."""
    try:
        return await Agent(model).run(prompt, **run_kwargs)
    finally:
        await model.aclose()


async def converse(model: ClaudeCodeModel, *prompts: str) -> list[AgentRunResult[str]]:
    """A conversation on ``model``, one run per prompt, each continuing the messages of the last; closes the model."""
    agent = Agent(model)
    results: list[AgentRunResult[str]] = []
    try:
        for prompt in prompts:
            results.append(await agent.run(prompt, message_history=results[-1].all_messages() if results else None))
    finally:
        await model.aclose()
    return results


def last_session_id(messages: list[Any]) -> str:
    """The CLI session id of the last message of a run's messages dumped as JSON (it must be a response)."""
    last = messages[-1]
    assert last["kind"] == "response"
    session_id = last["provider_details"]["session_id"]
    assert isinstance(session_id, str)
    return session_id


def numbered_lines(size: int) -> str:
    """``size`` characters of numbered lines, for a tool result whose every span says where it comes from."""
    lines = "".join(f"line {i:07d} of the output\n" for i in range(size // 27 + 1))
    return lines[:size]


async def run_then_close(agent: Agent[Any, Any], model: ClaudeCodeModel, *args: Any, **kwargs: Any) -> Any:
    """``agent.run(*args, **kwargs)`` on ``model``, which is closed afterwards, whatever happened."""
    try:
        return await agent.run(*args, model=model, **kwargs)
    finally:
        await model.aclose()
