"""Helpers of the reliability tests: a prompt-driven brain, process lookup and resource snapshots."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo

from tests._support.polling import wait_for
from tests._support.processes import cmdline, live_descendants

CALL_PREFIX = "call "
"""A prompt ``call <tool>`` makes the brain call the tool ``<tool>`` before it answers."""

RETRY_HINT = "try again"
"""pydantic-ai ends the text of a ``ModelRetry`` tool result with "Fix the errors and try again."."""

MAX_STUBBORN_CALLS = 8
"""How often the brain calls a failing tool again before it gives up (a stubborn model)."""


def _user_texts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


def _results_since_prompt(messages: list[ModelMessage]) -> list[ToolReturnPart | RetryPromptPart]:
    """The tool results of the current user turn (after the last user prompt)."""
    found: list[ToolReturnPart | RetryPromptPart] = []
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        if any(isinstance(part, UserPromptPart) for part in message.parts):
            break
        found[:0] = [part for part in message.parts if isinstance(part, ToolReturnPart | RetryPromptPart)]
    return found


def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline backend's brain for the matrix.

    ``call <tool> [<JSON arguments>]``: call ``mcp__*__<tool>`` and answer ``done: <result>``. A result asking
    to try again (a ``ModelRetry``) makes it call the tool again, stubbornly, up to ``MAX_STUBBORN_CALLS``
    times, then answer ``gave up``. Any other prompt: answer ``echo: <prompt>``.
    """
    texts = _user_texts(messages)
    prompt = texts[-1] if texts else ""
    if not prompt.startswith(CALL_PREFIX):
        return ModelResponse(parts=[TextPart(f"echo: {prompt}")])
    wanted, _, raw_arguments = prompt.removeprefix(CALL_PREFIX).strip().partition(" ")
    arguments = json.loads(raw_arguments) if raw_arguments else {}
    names = [tool.name for tool in info.function_tools if tool.name.rsplit("__", 1)[-1] == wanted]
    if not names:
        return ModelResponse(parts=[TextPart(f"no tool called {wanted}")])
    results = _results_since_prompt(messages)
    if not results:
        return ModelResponse(parts=[ToolCallPart(names[0], arguments)])
    last = str(results[-1].content)
    if RETRY_HINT not in last:
        return ModelResponse(parts=[TextPart(f"done: {last}")])
    if len(results) >= MAX_STUBBORN_CALLS:
        return ModelResponse(parts=[TextPart("gave up")])
    return ModelResponse(parts=[ToolCallPart(names[0], arguments)])


# --- tools ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockingTool:
    """What the ``wait_forever`` tool of :func:`add_blocking_tool` went through."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def add_blocking_tool(agent: Agent[Any, Any]) -> BlockingTool:
    """Give ``agent`` a tool ``wait_forever`` that never answers: it sets ``started``, then ``cancelled`` when
    the call is cancelled."""
    tool = BlockingTool()

    @agent.tool_plain
    async def wait_forever() -> str:
        tool.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            tool.cancelled.set()
            raise
        return "never"

    return tool


# --- resources ----------------------------------------------------------------------------------------------


def _open_fds() -> frozenset[str]:
    """This process's open file descriptors, each as ``fd -> target`` (sockets and pipes by inode)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            found.add(f"{name}->{os.readlink(f'/proc/self/fd/{name}')}")
        except OSError:
            continue  # the descriptor listdir itself used
    return frozenset(found)


@dataclass(frozen=True)
class Resources:
    """What a run could leak: child processes, entries in the temp dir, open file descriptors."""

    processes: frozenset[int]
    temp_entries: frozenset[str]
    fds: frozenset[str]

    @classmethod
    def now(cls) -> Resources:
        return cls(
            processes=frozenset(live_descendants()),
            temp_entries=frozenset(os.listdir(tempfile.gettempdir())),
            fds=_open_fds(),
        )

    def leaked_since(self, before: Resources) -> dict[str, list[str]]:
        """What exists now and did not before (empty when nothing leaked)."""
        leaks = {
            "processes": [f"{pid} {' '.join(cmdline(pid))[:120]}" for pid in sorted(self.processes - before.processes)],
            "temp_entries": sorted(self.temp_entries - before.temp_entries),
            "fds": sorted(self.fds - before.fds),
        }
        return {kind: items for kind, items in leaks.items() if items}


async def assert_nothing_leaked(before: Resources, within: float = 15.0) -> None:
    """Wait (bounded) for cleanup to settle, then fail if anything created since ``before`` still exists."""
    await wait_for(lambda: not Resources.now().leaked_since(before), within=within, interval=0.05)
    leaks = Resources.now().leaked_since(before)
    assert not leaks, f"leaked: {leaks}"
