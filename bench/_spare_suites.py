"""Suites of spare sessions and many conversations: new conversations on a model that has served one, the first
run on a prewarmed model, a brand-new model, the follow-up, 16 concurrent new conversations and follow-ups."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from claude_agent_sdk import ClaudeSDKClient
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, TextPart
from pydantic_ai.models import ModelRequestParameters

from bench import _raw
from bench._agents import deps_agent, first_details, last_details, probe_agent
from bench._brain import expected_answer, prompt
from bench._core import (
    BenchContext,
    Metrics,
    Row,
    Suite,
    Target,
    Variant,
    check,
    compared,
    live_descendants,
    status_kib,
)
from bench._sampler import own_cpu
from claudecode_model.model import ClaudeCodeModel

MANY = 16
"""Conversations at once in the concurrency rows."""


async def _timed_run(agent: Agent[None, str], source: str, history: Any = None) -> tuple[float, float, Any]:
    """Seconds of one run with one tool call (answer and session source checked), and its first-token time."""
    start = time.perf_counter()
    result = await agent.run(prompt(calls=1), message_history=history)
    wall = time.perf_counter() - start
    check(result.output == expected_answer(calls=1), f"run answered {result.output!r}")
    details = last_details(result.all_messages())
    check(details.get("session_source") == source, f"session source {details.get('session_source')!r}, not {source}")
    return wall, float(first_details(result.new_messages()).get("first_token_seconds", "nan")), result


async def ours_spare(bench: BenchContext) -> Metrics:
    """A model that has served one conversation: the next new one (same agent) claims the spare; then a
    follow-up of it with ``message_history``."""
    model = ClaudeCodeModel(env=bench.env)
    agent = probe_agent(model)
    try:
        await _timed_run(agent, "fresh")
        check(await model.prewarm(agent), "no spare after the first conversation")
        wall, first_token, result = await _timed_run(agent, "spare")
        cpu = own_cpu()
        follow, _, _ = await _timed_run(agent, "live", result.all_messages())
        cpu = own_cpu() - cpu
    finally:
        await model.aclose()
    return {"new_after_one": wall, "first_token_spare": first_token, "follow_up": follow, "cpu_follow_up": cpu}


async def ours_prewarmed(bench: BenchContext) -> Metrics:
    """A brand-new model, prewarmed for the agent; the first run."""
    model = ClaudeCodeModel(env=bench.env)
    agent = probe_agent(model)
    try:
        check(await model.prewarm(agent), "prewarm started no spare")
        rss = status_kib(live_descendants()) / 1024
        wall, _, _ = await _timed_run(agent, "spare")
    finally:
        await model.aclose()
    return {"first_prewarmed": wall, "spare_rss_mb": rss}


async def ours_fresh(bench: BenchContext) -> Metrics:
    """A brand-new model, no prewarm: the first run starts its CLI."""
    model = ClaudeCodeModel(env=bench.env)
    agent = probe_agent(model)
    try:
        cpu = own_cpu()
        wall, first_token, _ = await _timed_run(agent, "fresh")
        cpu = own_cpu() - cpu
    finally:
        await model.aclose()
    return {"first_fresh": wall, "first_token_new": first_token, "cpu_new": cpu}


async def raw_cold(bench: BenchContext) -> Metrics:
    """``ClaudeSDKClient`` connect + query with one tool call; then the next query on the same client."""
    client = ClaudeSDKClient(_raw.options(bench.env, _raw.probe_server(), partial_messages=True))
    try:
        cpu = own_cpu()
        start = time.perf_counter()
        await client.connect()
        await client.query(prompt(calls=1))
        _raw.answer_of(await _raw.result_of(client.receive_response()), expected_answer(calls=1))
        cold = time.perf_counter() - start
        cpu_cold = own_cpu() - cpu
        cpu = own_cpu()
        start = time.perf_counter()
        await client.query(prompt(calls=1))
        _raw.answer_of(await _raw.result_of(client.receive_response()), expected_answer(calls=1))
        follow = time.perf_counter() - start
        cpu_follow = own_cpu() - cpu
    finally:
        await client.disconnect()
    return {"cold": cold, "follow_up": follow, "cpu_cold": cpu_cold, "cpu_follow_up": cpu_follow}


class SpareSuite(Suite):
    """New conversations with spares and pre-warming, against the raw SDK's cold start in the same run."""

    name = "spares"
    description = "new conversation after one (spare), first run prewarmed, first run of a brand-new model, follow-up"
    row_names = (
        "spare-new",
        "prewarmed-first",
        "fresh-first",
        "follow-up-vs-cold",
        "first-token-spare",
        "cpu-new",
        "cpu-follow-up",
        "spare-rss",
    )

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {
            "ours_spare": lambda: ours_spare(bench),
            "ours_prewarmed": lambda: ours_prewarmed(bench),
            "ours_fresh": lambda: ours_fresh(bench),
            "raw": lambda: raw_cold(bench),
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        return [
            compared(
                medians,
                "spare-new",
                "new conversation on a model that served one (spare), 1 tool call",
                "ours_spare.new_after_one",
                "raw.cold",
                Target("<= 0.3 x raw cold", 0.3),
                note="the second agent.run() of one agent claims the spare the first left; raw = connect + query",
            ),
            compared(
                medians,
                "prewarmed-first",
                "first run on a prewarmed model, 1 tool call",
                "ours_prewarmed.first_prewarmed",
                "raw.cold",
                Target("<= 0.3 x raw cold", 0.3),
            ),
            compared(
                medians,
                "fresh-first",
                "first run on a brand-new model (no prewarm), 1 tool call",
                "ours_fresh.first_fresh",
                "raw.cold",
                Target("<= 1.0 x raw cold", 1.0),
            ),
            compared(
                medians,
                "follow-up-vs-cold",
                "follow-up turn (message_history) vs raw cold",
                "ours_spare.follow_up",
                "raw.cold",
                Target("<= 0.12 x raw cold", 0.12),
            ),
            compared(
                medians,
                "first-token-spare",
                "request to first token: spare vs new process",
                "ours_spare.first_token_spare",
                "ours_fresh.first_token_new",
                note="provider_details['first_token_seconds'] of the two runs",
            ),
            compared(
                medians,
                "cpu-new",
                "CPU of this process: first run, new process (raw: partial messages)",
                "ours_fresh.cpu_new",
                "raw.cpu_cold",
                Target("<= 1.2 x raw", 1.2),
            ),
            compared(
                medians,
                "cpu-follow-up",
                "CPU of this process: follow-up turn (raw: partial messages)",
                "ours_spare.cpu_follow_up",
                "raw.cpu_follow_up",
                Target("<= 1.2 x raw", 1.2),
            ),
            Row(
                key="spare-rss",
                name="RSS of a ready spare (CLI process tree)",
                ours=medians["ours_prewarmed.spare_rss_mb"],
                raw=None,
                unit="MB",
                target=Target("reported"),
            ),
        ]


# --- many conversations at once -----------------------------------------------------------------------------


async def _deps_run(agent: Agent[str, str], run_id: str, history: Any = None) -> Any:
    result = await agent.run(prompt(calls=1, run_id=run_id), deps=run_id, message_history=history)
    expected = expected_answer(calls=1, run_id=run_id, results=[f"{run_id}-0"])
    check(result.output == expected, f"run {run_id} answered {result.output!r}, expected {expected!r}")
    return result


async def ours_many(bench: BenchContext) -> Metrics:
    """``MANY`` new conversations at once on one model (each its own deps), then a follow-up of each at once (the
    model keeps them all, as the raw SDK's clients do)."""
    model = ClaudeCodeModel(env=bench.env, keep_sessions=MANY)
    agent = deps_agent(model)
    run_ids = [f"run{index}" for index in range(MANY)]
    try:
        start = time.perf_counter()
        results = await asyncio.gather(*(_deps_run(agent, run_id) for run_id in run_ids))
        new = time.perf_counter() - start
        start = time.perf_counter()
        follow = await asyncio.gather(
            *(_deps_run(agent, run_id, r.all_messages()) for run_id, r in zip(run_ids, results, strict=True))
        )
        follow_wall = time.perf_counter() - start
        live = sum(1 for r in follow if last_details(r.all_messages()).get("session_source") == "live")
    finally:
        await model.aclose()
    return {"new": new, "follow_up": follow_wall, "live_follow_ups": float(live)}


async def raw_many(bench: BenchContext) -> Metrics:
    """The same with ``MANY`` ``ClaudeSDKClient``s at once, then the next query on each at once."""
    run_ids = [f"run{index}" for index in range(MANY)]
    clients = [
        ClaudeSDKClient(_raw.options(bench.env, _raw.probe_server(prefix=f"{run_id}-"), partial_messages=True))
        for run_id in run_ids
    ]

    async def turn(client: ClaudeSDKClient, run_id: str, connect: bool) -> None:
        if connect:
            await client.connect()
        await client.query(prompt(calls=1, run_id=run_id))
        expected = expected_answer(calls=1, run_id=run_id, results=[f"{run_id}-0"])
        _raw.answer_of(await _raw.result_of(client.receive_response()), expected)

    try:
        start = time.perf_counter()
        await asyncio.gather(*(turn(c, r, True) for c, r in zip(clients, run_ids, strict=True)))
        new = time.perf_counter() - start
        start = time.perf_counter()
        await asyncio.gather(*(turn(c, r, False) for c, r in zip(clients, run_ids, strict=True)))
        follow = time.perf_counter() - start
    finally:
        await asyncio.gather(*(client.disconnect() for client in clients), return_exceptions=True)
    return {"new": new, "follow_up": follow}


class ManySuite(Suite):
    """Sixteen conversations at once on one model, against sixteen raw clients."""

    name = "many"
    description = f"{MANY} new conversations at once on one model (own deps, checked), then a follow-up of each"
    row_names = ("many-new", "many-follow-up")
    default_repeat = 2

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {"ours": lambda: ours_many(bench), "raw": lambda: raw_many(bench)}

    def rows(self, medians: dict[str, float]) -> list[Row]:
        live = medians["ours.live_follow_ups"]
        return [
            compared(
                medians,
                "many-new",
                f"{MANY} concurrent new conversations on one model (wall)",
                "ours.new",
                "raw.new",
                Target("all correct; <= 1.0 x raw", 1.0),
            ),
            compared(
                medians,
                "many-follow-up",
                f"{MANY} concurrent follow-ups (message_history) on one model (wall)",
                "ours.follow_up",
                "raw.follow_up",
                note=f"{live:.0f} of {MANY} follow-ups continued their live process (keep_sessions={MANY})",
            ),
        ]


# --- CPU of the model layer ------------------------------------------------------------------------------------

CPU_TURNS = 15


async def ours_model_cpu(bench: BenchContext) -> Metrics:
    """CPU of this process per follow-up turn through ``model.request()`` (no Agent), live session."""
    model = ClaudeCodeModel(env=bench.env, spare_sessions=0)
    messages: list[Any] = [ModelRequest.user_text_prompt(prompt())]
    try:
        messages.append(await model.request(messages, None, ModelRequestParameters()))
        cpu = own_cpu()
        for _ in range(CPU_TURNS):
            messages.append(ModelRequest.user_text_prompt(prompt()))
            response = await model.request(messages, None, ModelRequestParameters())
            check(response.parts == [TextPart(expected_answer(calls=0))], f"answered {response.parts!r}")
            check((response.provider_details or {}).get("session_source") == "live", "not the live session")
            messages.append(response)
        cpu = (own_cpu() - cpu) / CPU_TURNS
    finally:
        await model.aclose()
    return {"cpu_turn": cpu}


async def raw_client_cpu(bench: BenchContext) -> Metrics:
    """The same turns as ``query()`` calls on one ``ClaudeSDKClient`` with partial messages."""
    client = ClaudeSDKClient(_raw.options(bench.env, None, partial_messages=True))
    try:
        await client.connect()
        await client.query(prompt())
        await _raw.result_of(client.receive_response())
        cpu = own_cpu()
        for _ in range(CPU_TURNS):
            await client.query(prompt())
            _raw.answer_of(await _raw.result_of(client.receive_response()), expected_answer(calls=0))
        cpu = (own_cpu() - cpu) / CPU_TURNS
    finally:
        await client.disconnect()
    return {"cpu_turn": cpu}


class ModelCPUSuite(Suite):
    """CPU of this process per turn, the model alone (no Agent run machinery) against the raw SDK."""

    name = "model-cpu"
    description = f"{CPU_TURNS} follow-up turns through model.request() / ClaudeSDKClient.query(); CPU per turn"
    row_names = ("cpu-model-turn",)
    default_repeat = 21

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {"ours": lambda: ours_model_cpu(bench), "raw": lambda: raw_client_cpu(bench)}

    def rows(self, medians: dict[str, float]) -> list[Row]:
        return [
            compared(
                medians,
                "cpu-model-turn",
                "CPU of this process per turn, model.request() (no Agent) vs raw query() (partial messages)",
                "ours.cpu_turn",
                "raw.cpu_turn",
                Target("<= 1.2 x raw", 1.2),
            )
        ]
