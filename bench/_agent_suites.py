"""Suites that run the real Claude Code CLI: agent runs, tool calls, follow-up turns, streaming, concurrency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from claude_agent_sdk import ClaudeSDKClient, ResultMessage, query
from pydantic_ai import Agent, AgentRunResultEvent, RunContext
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta

from bench import _raw
from bench._brain import expected_answer, prompt
from bench._core import BenchContext, Metrics, Row, Stopwatch, Suite, Target, Variant, aclose, check, turn_metrics
from claudecode_model.model import ClaudeCodeModel

EXTRA_CALLS = 5
"""The warm turn that measures the per-call slope makes ``1 + EXTRA_CALLS`` tool calls."""

CONCURRENT_RUNS = 8

Transport = Literal["auto", "auto-stdio", "registered-stdio"]
"""How the agent's tool reaches the CLI: the automatic path (in-process MCP, or the stdio bridge with
``tool_transport="stdio"``), or registered with ``set_agent_toolsets(..., transport="stdio")``."""


def _probe_agent(model: ClaudeCodeModel) -> Agent[None, str]:
    """An agent with one tool; async like the raw side's (pydantic-ai runs a sync tool in a worker thread)."""
    agent = Agent(model)

    @agent.tool_plain
    async def probe(n: int) -> str:
        """Returns a probe value for n."""
        return f"p{n}"

    return agent


def _model(bench: BenchContext, transport: Transport) -> tuple[ClaudeCodeModel, Agent[None, str]]:
    """A fresh model and agent with the ``probe`` tool, served as ``transport`` says."""
    model = ClaudeCodeModel(env=bench.env, tool_transport="stdio" if transport == "auto-stdio" else "auto")
    agent = _probe_agent(model)
    if transport == "registered-stdio":
        model.set_agent_toolsets([agent._function_toolset], transport="stdio")
    return model, agent


def _session_id(result: Any) -> str:
    details = result.all_messages()[-1].provider_details or {}
    return str(details.get("session_id"))


async def ours_conversation(bench: BenchContext, transport: Transport) -> Metrics:
    """A cold run with one tool call, then two follow-up turns (1 and ``1 + EXTRA_CALLS`` calls) on the same model."""
    model, agent = _model(bench, transport)
    many = 1 + EXTRA_CALLS
    try:
        clock = Stopwatch()
        first = await agent.run(prompt(calls=1))
        cold = clock.lap()
        second = await agent.run(prompt(calls=1), message_history=first.all_messages())
        warm = clock.lap()
        third = await agent.run(prompt(calls=many), message_history=second.all_messages())
        warm_many = clock.lap()
    finally:
        await model.aclose()
    check(first.output == expected_answer(calls=1), f"cold run answered {first.output!r}")
    check(second.output == expected_answer(calls=1), f"follow-up answered {second.output!r}")
    check(third.output == expected_answer(calls=many), f"follow-up answered {third.output!r}")
    check(
        _session_id(first) == _session_id(second) == _session_id(third),
        "the follow-up turns did not continue the session",
    )
    return turn_metrics(cold, warm, warm_many, EXTRA_CALLS)


async def raw_conversation(bench: BenchContext) -> Metrics:
    """The same three turns on one ``ClaudeSDKClient`` with an in-process ``create_sdk_mcp_server`` tool."""
    client = ClaudeSDKClient(_raw.options(bench.env, _raw.probe_server()))
    many = 1 + EXTRA_CALLS
    try:
        clock = Stopwatch()
        await client.connect()
        await client.query(prompt(calls=1))
        first = await _raw.result_of(client.receive_response())
        cold = clock.lap()
        await client.query(prompt(calls=1))
        second = await _raw.result_of(client.receive_response())
        warm = clock.lap()
        await client.query(prompt(calls=many))
        third = await _raw.result_of(client.receive_response())
        warm_many = clock.lap()
    finally:
        await client.disconnect()
    _raw.answer_of(first, expected_answer(calls=1))
    _raw.answer_of(second, expected_answer(calls=1))
    _raw.answer_of(third, expected_answer(calls=many))
    return turn_metrics(cold, warm, warm_many, EXTRA_CALLS)


class AgentSuite(Suite):
    """Cold run, per-call cost on both transports and the warm follow-up turn, from one conversation per variant."""

    name = "agent"
    description = (
        "per variant one conversation: a cold run with one tool call, a follow-up turn with one call and one with "
        f"{1 + EXTRA_CALLS} calls (slope = difference / {EXTRA_CALLS})"
    )
    row_names = (
        "cold-run",
        "tool-call-inprocess",
        "tool-call-stdio",
        "tool-call-auto-stdio",
        "cold-run-stdio",
        "follow-up",
    )

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {
            "ours": lambda: ours_conversation(bench, "auto"),
            "raw": lambda: raw_conversation(bench),
            "ours_stdio": lambda: ours_conversation(bench, "registered-stdio"),
            "ours_auto_stdio": lambda: ours_conversation(bench, "auto-stdio"),
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        cold_ratio = medians["ours.warm"] / medians["ours.cold"]
        return [
            Row(
                key="cold-run",
                name="cold agent run, one tool call",
                ours=medians["ours.cold"],
                raw=medians["raw.cold"],
                target=Target("<= 1.10 x raw", 1.10),
                note="new CLI process; raw = ClaudeSDKClient connect + query with a create_sdk_mcp_server tool",
            ),
            Row(
                key="tool-call-inprocess",
                name="per extra tool call, in-process",
                ours=medians["ours.slope"],
                raw=medians["raw.slope"],
                target=Target("<= 1.2 x raw", 1.2),
                note=f"(follow-up turn with {1 + EXTRA_CALLS} calls - follow-up turn with 1 call) / {EXTRA_CALLS}",
            ),
            Row(
                key="tool-call-stdio",
                name="per extra tool call, stdio bridge (set_agent_toolsets)",
                ours=medians["ours_stdio.slope"],
                raw=medians["raw.slope"],
                target=Target("<= 1.5 x raw in-process", 1.5),
            ),
            Row(
                key="tool-call-auto-stdio",
                name="per extra tool call, stdio bridge (tool_transport)",
                ours=medians["ours_auto_stdio.slope"],
                raw=medians["raw.slope"],
                target=Target("<= 1.5 x raw in-process", 1.5),
            ),
            Row(
                key="cold-run-stdio",
                name="cold agent run, one tool call, stdio bridge",
                ours=medians["ours_stdio.cold"],
                raw=medians["raw.cold"],
                target=Target("reported"),
            ),
            Row(
                key="follow-up",
                name="follow-up turn (message_history), one tool call",
                ours=medians["ours.warm"],
                raw=medians["raw.warm"],
                note="the live CLI process continues; raw = the next query() on the same ClaudeSDKClient",
                target=Target("<= 0.2 x a cold turn", 0.2),
                figure=cold_ratio,
                figure_text=f"{cold_ratio:.2f} x cold",
            ),
        ]


# --- streaming ------------------------------------------------------------------------------------------------


def _is_text_event(event: object) -> bool:
    if isinstance(event, PartStartEvent):
        return isinstance(event.part, TextPart) and bool(event.part.content)
    return isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta)


async def ours_first_delta(bench: BenchContext) -> Metrics:
    """Seconds until ``agent.run_stream_events`` yields the first text, and until the run's result."""
    model = ClaudeCodeModel(env=bench.env)
    agent = Agent(model)
    first: float | None = None
    deltas = 0
    output: object = None
    try:
        start = time.perf_counter()
        async with agent.run_stream_events(prompt(long=True)) as events:
            async for event in events:
                if _is_text_event(event):
                    deltas += 1
                    if first is None:
                        first = time.perf_counter() - start
                elif isinstance(event, AgentRunResultEvent):
                    output = event.result.output
        total = time.perf_counter() - start
    finally:
        await model.aclose()
    check(output == expected_answer(calls=0, long=True), f"streamed run answered {output!r}")
    check(first is not None and deltas > 5, f"the text came in {deltas} events, not as a stream")
    assert first is not None
    return {"first_delta": first, "total": total}


async def raw_first_delta(bench: BenchContext) -> Metrics:
    """Seconds until ``query(include_partial_messages=True)`` yields the first ``text_delta``, and its result."""
    first: float | None = None
    deltas = 0
    start = time.perf_counter()
    messages = query(prompt=prompt(long=True), options=_raw.options(bench.env, partial_messages=True))
    try:
        async for message in messages:
            if _raw.text_delta(message) is not None:
                deltas += 1
                if first is None:
                    first = time.perf_counter() - start
            elif isinstance(message, ResultMessage):
                total = time.perf_counter() - start
                _raw.answer_of(message, expected_answer(calls=0, long=True))
                break
    finally:
        await aclose(messages)
    check(first is not None and deltas > 5, f"the raw text came in {deltas} deltas")
    assert first is not None
    return {"first_delta": first, "total": total}


class StreamSuite(Suite):
    """Latency of the first streamed text delta, a cold run answering a long text in many chunks."""

    name = "stream"
    description = "a cold run whose answer the backend streams in over 30 chunks; time to the first text delta"
    row_names = ("first-delta", "stream-total")

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {"ours": lambda: ours_first_delta(bench), "raw": lambda: raw_first_delta(bench)}

    def rows(self, medians: dict[str, float]) -> list[Row]:
        return [
            Row(
                key="first-delta",
                name="first streamed text delta",
                ours=medians["ours.first_delta"],
                raw=medians["raw.first_delta"],
                target=Target("<= 1.1 x raw (partial messages)", 1.1),
            ),
            Row(
                key="stream-total",
                name="streamed run, whole answer",
                ours=medians["ours.total"],
                raw=medians["raw.total"],
                target=Target("reported"),
            ),
        ]


# --- concurrency ----------------------------------------------------------------------------------------------


def _deps_agent(model: ClaudeCodeModel) -> Agent[str, str]:
    agent = Agent(model, deps_type=str)

    @agent.tool
    async def probe(ctx: RunContext[str], n: int) -> str:
        """Returns a probe value for n."""
        return f"{ctx.deps}-{n}"

    return agent


async def _ours_run(agent: Agent[str, str], run_id: str) -> None:
    result = await agent.run(prompt(calls=1, run_id=run_id), deps=run_id)
    expected = expected_answer(calls=1, run_id=run_id, results=[f"{run_id}-0"])
    check(result.output == expected, f"run {run_id} answered {result.output!r}, expected {expected!r}")


async def ours_runs(bench: BenchContext, *, concurrent: bool) -> Metrics:
    """Wall time of ``CONCURRENT_RUNS`` runs on one model (each with its own deps), together or one by one."""
    model = ClaudeCodeModel(env=bench.env)
    agent = _deps_agent(model)
    run_ids = [f"run{index}" for index in range(CONCURRENT_RUNS)]
    try:
        start = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(_ours_run(agent, run_id) for run_id in run_ids))
        else:
            for run_id in run_ids:
                await _ours_run(agent, run_id)
        wall = time.perf_counter() - start
    finally:
        await model.aclose()
    return {"wall": wall}


async def _raw_run(bench: BenchContext, run_id: str) -> None:
    opts = _raw.options(bench.env, _raw.probe_server(prefix=f"{run_id}-"))
    await _raw.timed_query(
        prompt(calls=1, run_id=run_id), opts, expected_answer(calls=1, run_id=run_id, results=[f"{run_id}-0"])
    )


async def raw_runs(bench: BenchContext, *, concurrent: bool) -> Metrics:
    """The same runs with ``query()``, each with its own in-process server."""
    run_ids = [f"run{index}" for index in range(CONCURRENT_RUNS)]
    start = time.perf_counter()
    if concurrent:
        await asyncio.gather(*(_raw_run(bench, run_id) for run_id in run_ids))
    else:
        for run_id in run_ids:
            await _raw_run(bench, run_id)
    return {"wall": time.perf_counter() - start}


class ConcurrencySuite(Suite):
    """Eight runs with one tool call each on one model: all at once, and one after the other."""

    name = "concurrency"
    description = f"{CONCURRENT_RUNS} runs with one tool call and their own deps, on one model; answers checked"
    row_names = ("concurrent", "sequential")
    default_repeat = 3  # by far the most expensive suite: 4 x 8 cold runs per repetition

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {
            "ours_concurrent": lambda: ours_runs(bench, concurrent=True),
            "raw_concurrent": lambda: raw_runs(bench, concurrent=True),
            "ours_sequential": lambda: ours_runs(bench, concurrent=False),
            "raw_sequential": lambda: raw_runs(bench, concurrent=False),
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        speedup = medians["ours_sequential.wall"] / medians["ours_concurrent.wall"]
        return [
            Row(
                key="concurrent",
                name=f"{CONCURRENT_RUNS} concurrent runs on one model (wall)",
                ours=medians["ours_concurrent.wall"],
                raw=medians["raw_concurrent.wall"],
                target=Target("all correct; vs sequential", correctness=True),
                figure_text=f"speed-up {speedup:.2f} x vs sequential",
            ),
            Row(
                key="sequential",
                name=f"{CONCURRENT_RUNS} sequential runs on one model (wall)",
                ours=medians["ours_sequential.wall"],
                raw=medians["raw_sequential.wall"],
                target=Target("reported"),
            ),
        ]
