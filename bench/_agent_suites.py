"""Suites that run the real Claude Code CLI: agent runs, tool calls, follow-up turns, streaming, concurrency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from claude_agent_sdk import ClaudeSDKClient, ResultMessage, query
from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai.models.function import FunctionModel

from bench import _raw
from bench._agents import deps_agent, probe_agent, session_id
from bench._brain import bench_brain, expected_answer, prompt
from bench._core import (
    BenchContext,
    Lap,
    Metrics,
    Row,
    Stopwatch,
    Suite,
    Target,
    Variant,
    aclose,
    check,
    compared,
    measured,
    turn_metrics,
)
from claudecode_model.model import ClaudeCodeModel

EXTRA_CALLS = 10
"""The follow-up turn that measures the per-call slope makes ``1 + EXTRA_CALLS`` tool calls."""

PAIRS = 4
"""Pairs of follow-up turns (one call, then ``1 + EXTRA_CALLS``) per conversation; the slope is the median of the
pairs' slopes, so that one slow turn (a load spike on the shared machine) does not move it."""

FOLLOW_UPS = (1, 1 + EXTRA_CALLS) * PAIRS
"""Tool calls of the follow-up turns after the cold one."""

CONCURRENT_RUNS = 8

ToolExecution = Literal["agent", "cli"]
"""Who runs the agent's tool: pydantic-ai (agent-run, the default) or Claude Code's loop (in-loop)."""

Transport = Literal["auto", "auto-stdio", "registered-stdio"]
"""How the agent's tool reaches the CLI: the automatic path (in-process MCP, or the stdio bridge with
``tool_transport="stdio"``), or registered with ``set_agent_toolsets(..., transport="stdio")``."""


def _model(
    bench: BenchContext, transport: Transport, execution: ToolExecution = "agent"
) -> tuple[ClaudeCodeModel, Agent[None, str]]:
    """A fresh model and agent with the ``probe`` tool, served as ``transport`` says and run by ``execution``.

    Without spares: the spare a new conversation leaves would start its CLI during the timed follow-ups (the
    ``spares`` suite measures what spares cost and bring)."""
    model = ClaudeCodeModel(
        env=bench.env,
        tool_transport="stdio" if transport == "auto-stdio" else "auto",
        tool_execution=execution,
        spare_sessions=0,
    )
    agent = probe_agent(model)
    if transport == "registered-stdio":
        model.set_agent_toolsets([agent._function_toolset], transport="stdio")
    return model, agent


async def _conversation(turn: Callable[[int], Awaitable[str]]) -> Metrics:
    """Time a cold turn with one tool call, then the follow-up turns of ``FOLLOW_UPS``; check every answer."""
    clock = Stopwatch()
    answer = await turn(1)
    cold = clock.lap()
    check(answer == expected_answer(calls=1), f"cold run answered {answer!r}")
    laps: dict[int, list[Lap]] = {}
    for calls in FOLLOW_UPS:
        clock.restart()
        answer = await turn(calls)
        laps.setdefault(calls, []).append(clock.lap())
        check(answer == expected_answer(calls=calls), f"follow-up with {calls} calls answered {answer!r}")
    return turn_metrics(cold, laps[1], laps[1 + EXTRA_CALLS], EXTRA_CALLS)


def _agent_turns(agent: Agent[None, str]) -> tuple[Callable[[int], Awaitable[str]], list[Any]]:
    """A turn of :func:`_conversation` run by ``agent`` (each follow-up with the previous run's messages as history),
    and the results of the runs so far."""
    results: list[Any] = []

    async def turn(calls: int) -> str:
        history = results[-1].all_messages() if results else None
        result = await agent.run(prompt(calls=calls), message_history=history)
        results.append(result)
        return result.output

    return turn, results


async def ours_conversation(bench: BenchContext, transport: Transport, execution: ToolExecution = "agent") -> Metrics:
    """A conversation on a fresh model; every follow-up passes the previous run's messages as history."""
    model, agent = _model(bench, transport, execution)
    turn, results = _agent_turns(agent)
    try:
        metrics = await _conversation(turn)
    finally:
        await model.aclose()
    sessions = {session_id(result.all_messages()) for result in results}
    check(len(sessions) == 1, "a follow-up turn did not continue the session")
    return metrics


async def agent_alone_conversation() -> Metrics:
    """The same conversation on pydantic-ai alone: the agent on a ``FunctionModel`` with the backend's brain (no CLI,
    no HTTP): what pydantic-ai's own agent loop costs for the same turns."""
    turn, _ = _agent_turns(probe_agent(FunctionModel(bench_brain)))
    return await _conversation(turn)


async def raw_conversation(bench: BenchContext, *, partial_messages: bool = False) -> Metrics:
    """The same conversation on one ``ClaudeSDKClient`` with an in-process ``create_sdk_mcp_server`` tool."""
    client = ClaudeSDKClient(_raw.options(bench.env, _raw.probe_server(), partial_messages=partial_messages))
    connected = False

    async def turn(calls: int) -> str:
        nonlocal connected
        if not connected:
            await client.connect()
            connected = True
        await client.query(prompt(calls=calls))
        result = await _raw.result_of(client.receive_response())
        check(not result.is_error, f"the raw SDK run failed: {result.subtype} {result.result!r}")
        return str(result.result)

    try:
        return await _conversation(turn)
    finally:
        await client.disconnect()


class AgentSuite(Suite):
    """Cold run, per-call cost on both transports and the warm follow-up turn, from one conversation per variant."""

    name = "agent"
    description = (
        "per variant one conversation: a cold run with one tool call, then follow-up turns with "
        f"{PAIRS} pairs of 1 and {1 + EXTRA_CALLS} calls (slope = median of the pairs' differences / {EXTRA_CALLS})"
    )
    row_names = (
        "cold-run",
        "tool-call-inprocess",
        "tool-call-vs-inloop",
        "tool-call-inloop",
        "many-calls",
        "tool-call-stdio",
        "tool-call-auto-stdio",
        "tool-call-partial-ref",
        "cold-run-stdio",
        "follow-up",
        "cpu-cold",
        "cpu-warm",
        "cpu-slope",
        "cpu-slope-inloop",
        "agent-alone-slope",
        "cpu-agent-alone-warm",
        "cpu-agent-alone-slope",
        "tool-call-vs-floor",
        "cpu-warm-vs-floor",
        "cpu-slope-vs-floor",
    )

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {
            "ours": lambda: ours_conversation(bench, "auto"),
            "ours_inloop": lambda: ours_conversation(bench, "auto", "cli"),
            "raw": lambda: raw_conversation(bench),
            "raw_partial": lambda: raw_conversation(bench, partial_messages=True),
            "ours_stdio": lambda: ours_conversation(bench, "registered-stdio"),
            "ours_auto_stdio": lambda: ours_conversation(bench, "auto-stdio"),
            "agent_alone": agent_alone_conversation,
        }

    def derived(self, samples: dict[str, list[float]]) -> dict[str, list[float]]:
        """``floor.*``: the raw SDK plus pydantic-ai's own agent loop, each repetition's sum: the least an agent run
        can cost when pydantic-ai runs the tools (what the library adds is the rest)."""
        return {
            f"floor.{metric}": [
                raw + alone
                for raw, alone in zip(samples[f"raw.{metric}"], samples[f"agent_alone.{metric}"], strict=True)
            ]
            for metric in ("slope", "cpu_warm", "cpu_slope")
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        cold_ratio = medians["ours.warm"] / medians["ours.cold"]
        return [
            compared(
                medians,
                "cold-run",
                "cold agent run, one tool call",
                "ours.cold",
                "raw.cold",
                Target("<= 1.10 x raw", 1.10),
                note="new CLI process; raw = ClaudeSDKClient connect + query with a create_sdk_mcp_server tool",
            ),
            compared(
                medians,
                "tool-call-inprocess",
                "per extra tool call, in-process",
                "ours.slope",
                "raw.slope",
                Target("<= 1.2 x raw", 1.2),
                note=f"pydantic-ai runs the tool (agent-run, the default): (follow-up with {1 + EXTRA_CALLS} calls - "
                f"follow-up with 1 call) / {EXTRA_CALLS}, median of {PAIRS} pairs",
            ),
            compared(
                medians,
                "tool-call-vs-inloop",
                "per extra tool call, agent-run vs in-loop execution",
                "ours.slope",
                "ours_inloop.slope",
                Target("<= 1.1 x in-loop", 1.1),
                note='the same conversation with tool_execution="cli" (the tool runs inside Claude Code\'s loop)',
            ),
            compared(
                medians,
                "tool-call-inloop",
                "per extra tool call, in-loop execution",
                "ours_inloop.slope",
                "raw.slope",
                Target("<= 1.1 x raw", 1.1),
            ),
            compared(
                medians,
                "many-calls",
                f"follow-up turn with {1 + EXTRA_CALLS} tool calls (one per reply)",
                "ours.warm_many",
                "raw.warm_many",
                Target("<= 1.15 x raw", 1.15),
                note=f"agent-run: {2 + EXTRA_CALLS} model requests in one CLI turn; raw = one query()",
            ),
            compared(
                medians,
                "tool-call-stdio",
                "per extra tool call, stdio bridge (set_agent_toolsets)",
                "ours_stdio.slope",
                "raw.slope",
                Target("<= 1.5 x raw in-process", 1.5),
            ),
            compared(
                medians,
                "tool-call-auto-stdio",
                "per extra tool call, stdio bridge (tool_transport)",
                "ours_auto_stdio.slope",
                "raw.slope",
                Target("<= 1.5 x raw in-process", 1.5),
            ),
            compared(
                medians,
                "tool-call-partial-ref",
                "reference: raw SDK with partial messages, per extra call",
                "raw_partial.slope",
                "raw.slope",
                note="what include_partial_messages (always on in ClaudeCodeModel) costs the raw SDK per tool call",
            ),
            compared(
                medians, "cold-run-stdio", "cold agent run, one tool call, stdio bridge", "ours_stdio.cold", "raw.cold"
            ),
            Row(
                key="follow-up",
                name="follow-up turn (message_history), one tool call",
                **measured(medians, "ours.warm", "raw.warm"),
                note="the live CLI process continues; raw = the next query() on the same ClaudeSDKClient",
                target=Target("<= 0.2 x a cold turn", 0.2),
                figure=cold_ratio,
                figure_text=f"{cold_ratio:.2f} x cold",
            ),
            *(
                compared(
                    medians,
                    f"cpu-{metric.replace('_', '-')}",
                    f"CPU of this process: {label}",
                    f"ours.cpu_{metric}",
                    f"raw.cpu_{metric}",
                    note="process CPU time (our code, the SDK and the backend thread; not the CLI): steady under load"
                    if metric == "cold"
                    else "",
                )
                for metric, label in (("cold", "cold run"), ("warm", "follow-up turn"), ("slope", "per extra call"))
            ),
            compared(
                medians,
                "agent-alone-slope",
                "reference: pydantic-ai alone (FunctionModel, no CLI), per extra call",
                "agent_alone.slope",
                "raw.slope",
                note="the agent's own loop for the same turns: its share of agent-run's per-call time",
            ),
            compared(
                medians,
                "cpu-agent-alone-warm",
                "CPU of pydantic-ai alone (FunctionModel, no CLI): follow-up turn",
                "agent_alone.cpu_warm",
                "raw.cpu_warm",
            ),
            compared(
                medians,
                "cpu-agent-alone-slope",
                "CPU of pydantic-ai alone (FunctionModel, no CLI): per extra call",
                "agent_alone.cpu_slope",
                "raw.cpu_slope",
            ),
            compared(
                medians,
                "tool-call-vs-floor",
                "per extra tool call, agent-run vs raw SDK + pydantic-ai alone",
                "ours.slope",
                "floor.slope",
                Target("<= 1.1 x raw + pydantic-ai", 1.1),
                note="the raw column is the raw SDK's per-call time plus pydantic-ai alone's, repetition by repetition",
            ),
            compared(
                medians,
                "cpu-warm-vs-floor",
                "CPU of this process: follow-up turn vs raw SDK + pydantic-ai alone",
                "ours.cpu_warm",
                "floor.cpu_warm",
                Target("<= 1.2 x raw + pydantic-ai", 1.2),
            ),
            compared(
                medians,
                "cpu-slope-vs-floor",
                "CPU of this process: per extra call vs raw SDK + pydantic-ai alone",
                "ours.cpu_slope",
                "floor.cpu_slope",
                Target("<= 1.2 x raw + pydantic-ai", 1.2),
            ),
            compared(
                medians,
                "cpu-slope-inloop",
                "CPU of this process: per extra call, in-loop execution",
                "ours_inloop.cpu_slope",
                "raw.cpu_slope",
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
            compared(
                medians,
                "first-delta",
                "first streamed text delta",
                "ours.first_delta",
                "raw.first_delta",
                Target("<= 1.1 x raw (partial messages)", 1.1),
            ),
            compared(medians, "stream-total", "streamed run, whole answer", "ours.total", "raw.total"),
        ]


# --- concurrency ----------------------------------------------------------------------------------------------


async def _ours_run(agent: Agent[str, str], run_id: str) -> None:
    result = await agent.run(prompt(calls=1, run_id=run_id), deps=run_id)
    expected = expected_answer(calls=1, run_id=run_id, results=[f"{run_id}-0"])
    check(result.output == expected, f"run {run_id} answered {result.output!r}, expected {expected!r}")


async def ours_runs(bench: BenchContext, *, concurrent: bool) -> Metrics:
    """Wall time of ``CONCURRENT_RUNS`` runs on one model (each with its own deps), together or one by one."""
    model = ClaudeCodeModel(env=bench.env)
    agent = deps_agent(model)
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


async def raw_concurrent_runs(bench: BenchContext) -> Metrics:
    """The same runs at once with ``query()``, each with its own in-process server."""
    run_ids = [f"run{index}" for index in range(CONCURRENT_RUNS)]
    start = time.perf_counter()
    await asyncio.gather(*(_raw_run(bench, run_id) for run_id in run_ids))
    return {"wall": time.perf_counter() - start}


class ConcurrencySuite(Suite):
    """Eight runs with one tool call each on one model: all at once (against the raw SDK doing the same), and
    one after the other."""

    name = "concurrency"
    description = f"{CONCURRENT_RUNS} runs with one tool call and their own deps, on one model; answers checked"
    row_names = ("concurrent",)
    default_repeat = 3  # by far the most expensive suite: 3 x 8 cold runs per repetition

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {
            "ours_concurrent": lambda: ours_runs(bench, concurrent=True),
            "raw_concurrent": lambda: raw_concurrent_runs(bench),
            "ours_sequential": lambda: ours_runs(bench, concurrent=False),
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        sequential = medians["ours_sequential.wall"]
        speedup = sequential / medians["ours_concurrent.wall"]
        return [
            Row(
                key="concurrent",
                name=f"{CONCURRENT_RUNS} concurrent runs on one model (wall)",
                **measured(medians, "ours_concurrent.wall", "raw_concurrent.wall"),
                target=Target("all correct; vs sequential", correctness=True),
                figure_text=f"{speedup:.2f} x faster than sequential ({sequential:.1f} s)",
                note=f"each run has its own deps, checked in its answer; raw = {CONCURRENT_RUNS} query() at once",
            ),
        ]
