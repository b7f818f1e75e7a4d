"""Running an agent as a DBOS workflow in the test process (DBOS is configured, and destroyed, by the caller)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel


def asking_workflow(agent: Agent[None, str]) -> Callable[[str], Awaitable[str]]:
    """A DBOS workflow that runs ``agent`` on a prompt and returns its output (made before ``DBOS.launch()``)."""
    from dbos import DBOS

    @DBOS.workflow()
    async def ask(prompt: str) -> str:
        return (await agent.run(prompt)).output

    return ask


async def launch_and_ask(model: ClaudeCodeModel, agent: Agent[None, str], prompt: str) -> str:
    """Launch DBOS with :func:`asking_workflow` of ``agent`` and run it on ``prompt``; ``model`` is closed after."""
    from dbos import DBOS

    ask = asking_workflow(agent)
    DBOS.launch()
    try:
        return await ask(prompt)
    finally:
        await model.aclose()
