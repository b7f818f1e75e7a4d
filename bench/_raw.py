"""The raw claude-agent-sdk side of each comparison: the same work done with ``query()`` / ``ClaudeSDKClient``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    McpSdkServerConfig,
    ResultMessage,
    StreamEvent,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk.types import Message

from bench._core import BenchError, aclose, check

SERVER = "bench"
"""The raw side's in-process MCP server; its tool reaches Claude as ``mcp__bench__probe``."""


def probe_server(prefix: str = "p") -> McpSdkServerConfig:
    """An in-process server whose ``probe`` tool answers ``<prefix><n>`` (the SDK's ``@tool`` API)."""

    @tool("probe", "Returns a probe value for n.", {"n": int})
    async def probe(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"{prefix}{args['n']}"}]}

    return create_sdk_mcp_server(SERVER, tools=[probe])


def options(
    env: dict[str, str], server: McpSdkServerConfig | None = None, *, partial_messages: bool = False
) -> ClaudeAgentOptions:
    """Options as a careful raw SDK user would write them: no built-in tools, the tool granted, settings isolated.

    The same choices ``ClaudeCodeModel`` makes, so both sides start the CLI with the same flags (except that
    ours always streams partial messages).
    """
    return ClaudeAgentOptions(
        tools=[],
        mcp_servers={SERVER: server} if server is not None else {},
        allowed_tools=[f"mcp__{SERVER}"] if server is not None else [],
        permission_mode="dontAsk",
        setting_sources=[],
        strict_mcp_config=True,
        include_partial_messages=partial_messages,
        env=dict(env),
    )


async def result_of(messages: AsyncIterator[Message]) -> ResultMessage:
    """Consume messages up to the ``ResultMessage`` and return it."""
    async for message in messages:
        if isinstance(message, ResultMessage):
            return message
    raise BenchError("the SDK ended without a ResultMessage")


def answer_of(result: ResultMessage, expected: str) -> str:
    """The result text, checked against ``expected``."""
    check(not result.is_error, f"the raw SDK run failed: {result.subtype} {result.result!r}")
    check(result.result == expected, f"raw SDK answered {result.result!r}, expected {expected!r}")
    return expected


async def timed_query(prompt: str, opts: ClaudeAgentOptions, expected: str) -> float:
    """Seconds from calling ``query()`` until its ``ResultMessage`` (the answer in hand), answer checked."""
    start = time.perf_counter()
    messages = query(prompt=prompt, options=opts)
    try:
        result = await result_of(messages)
        elapsed = time.perf_counter() - start
    finally:
        await aclose(messages)
    answer_of(result, expected)
    return elapsed


def text_delta(message: Message) -> str | None:
    """The text of a partial-message ``text_delta`` event, else ``None``."""
    if not isinstance(message, StreamEvent):
        return None
    event = message.event
    delta = event.get("delta") if event.get("type") == "content_block_delta" else None
    if isinstance(delta, dict) and delta.get("type") == "text_delta":
        return str(delta.get("text", ""))
    return None
