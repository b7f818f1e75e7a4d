"""The lean suite: how many CLI processes one program holds under a stream of new conversations and after a burst.

``seq-50``: one model and agent answer 50 new conversations (one tool call each, no history) one after another with
no pause, as a server answering one user after another does; the most CLIs held throughout and their RSS. ``burst-16``:
16 concurrent ``agent.run()``s on one model, then the program stays idle; the most CLIs during the burst, and the
seconds after it until the program is back within the bound of 3 CLIs (watched up to 75 s). Both measure whatever
the library does with its defaults; the figures come from the benchmark's process sampler (``bench/_sampler.py``).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic_ai import Agent

from bench._agents import probe_agent
from bench._brain import expected_answer, prompt
from bench._core import BenchContext, Metrics, Row, Suite, Target, Variant, check
from bench._sampler import Sample, TreeSampler
from claudecode_model.model import ClaudeCodeModel

SEQUENTIAL = 50
BURST = 16
BOUND = 3
"""The most CLIs a program may hold (the one working and 2 idle)."""
WATCH = 75.0
"""Seconds the burst's program is watched for coming back within the bound."""
STEADY = 2.0
"""Seconds the program must stay within the bound for it to count as back."""
RETURN_LIMIT = 60.0


async def _run(agent: Agent[None, str], run_id: str) -> None:
    result = await agent.run(prompt(calls=1, run_id=run_id))
    expected = expected_answer(calls=1, run_id=run_id)
    check(result.output == expected, f"run {run_id} answered {result.output!r}, expected {expected!r}")


async def sequential(bench: BenchContext) -> Metrics:
    """``SEQUENTIAL`` new conversations one after another on one agent; the most CLIs and RSS while they ran."""
    model = ClaudeCodeModel(env=bench.env)
    agent = probe_agent(model)
    try:
        start, clock = time.monotonic_ns(), time.perf_counter()
        for index in range(SEQUENTIAL):
            await _run(agent, f"s{index}")
        wall = time.perf_counter() - clock
        during = bench.sampler.window(start, time.monotonic_ns())
    finally:
        await model.aclose()
    return {
        "wall": wall,
        "per_conversation": wall / SEQUENTIAL,
        "clis_during": float(during.max_clis),
        "rss_during": during.max_rss_mib,
    }


def back_within(samples: list[Sample], since: int, now: int) -> float | None:
    """Seconds from ``since`` until the samples came within :data:`BOUND` CLIs for good: the start of the last run of
    samples within it, once that run has lasted :data:`STEADY` seconds by ``now`` (``None``: not yet)."""
    later = [sample for sample in samples if sample.at >= since]
    over = [index for index, sample in enumerate(later) if sample.clis > BOUND]
    calm = later[over[-1] + 1 :] if over else later
    if not calm or (now - calm[0].at) / 1e9 < STEADY:
        return None
    return max(calm[0].at - since, 0) / 1e9


async def watch_return(sampler: TreeSampler, since: int) -> float | None:
    """Wait until the program is back within the bound (see :func:`back_within`), at most :data:`WATCH` seconds."""
    deadline = since + int(WATCH * 1e9)
    while (now := time.monotonic_ns()) < deadline:
        seconds = back_within(sampler.window(since, now).samples, since, now)
        if seconds is not None:
            return seconds
        await asyncio.sleep(0.25)
    return None


async def burst(bench: BenchContext) -> Metrics:
    """``BURST`` concurrent runs on one model, then idle: the most CLIs during the burst, and how long after it the
    program holds more than :data:`BOUND` (``WATCH`` when it never came back within the watch)."""
    model = ClaudeCodeModel(env=bench.env)
    agent = probe_agent(model)
    try:
        start, clock = time.monotonic_ns(), time.perf_counter()
        await asyncio.gather(*(_run(agent, f"b{index}") for index in range(BURST)))
        wall = time.perf_counter() - clock
        end = time.monotonic_ns()
        during = bench.sampler.window(start, end)
        seconds = await watch_return(bench.sampler, end)
    finally:
        await model.aclose()
    return {
        "wall": wall,
        "clis_during": float(during.max_clis),
        "rss_during": during.max_rss_mib,
        "back_within": seconds if seconds is not None else WATCH,
        "came_back": 1.0 if seconds is not None else 0.0,
    }


class LeanSuite(Suite):
    """The CLIs one program holds: a stream of new conversations, and the idle time after a burst."""

    name = "lean"
    description = f"{SEQUENTIAL} new conversations in a row; {BURST} concurrent runs, then idle (CLIs held)"
    row_names = ("seq-50", "burst-16")
    default_repeat = 1
    keep_series = True

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        yield {"seq": lambda: sequential(bench), "burst": lambda: burst(bench)}

    def rows(self, medians: dict[str, float]) -> list[Row]:
        clis = medians["seq.clis_during"]
        seconds = medians["burst.back_within"]
        came_back = medians["burst.came_back"] >= 0.5
        return [
            Row(
                key="seq-50",
                name=f"{SEQUENTIAL} new conversations one after another, one model, no pause: most CLIs held",
                ours=clis,
                raw=None,
                unit="CLIs",
                target=Target(f"<= {BOUND} CLIs", BOUND),
                figure=clis,
                figure_text=f"{clis:g} CLIs",
                variants=("seq", None),
                note=(
                    f"{medians['seq.per_conversation'] * 1e3:.0f} ms a conversation; "
                    f"most RSS of the CLIs {medians['seq.rss_during']:.0f} MiB"
                ),
            ),
            Row(
                key="burst-16",
                name=f"{BURST} concurrent runs on one model, then idle: seconds until back within {BOUND} CLIs",
                ours=seconds,
                raw=None,
                target=Target(f"<= {RETURN_LIMIT:.0f} s", RETURN_LIMIT),
                figure=seconds if came_back else math.inf,
                figure_text=f"{seconds:.1f} s" if came_back else f"> {WATCH:.0f} s",
                variants=("burst", None),
                note=(
                    f"most CLIs during the burst {medians['burst.clis_during']:g} "
                    f"({medians['burst.rss_during']:.0f} MiB), the burst took {medians['burst.wall']:.1f} s; "
                    f"watched up to {WATCH:.0f} s after it, back = within {BOUND} CLIs for {STEADY:.0f} s"
                ),
            ),
        ]
