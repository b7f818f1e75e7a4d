"""The sync suite: new conversations in a synchronous program (``agent.run_sync()``), one fresh program per round.

A ``run_sync`` program runs its event loop only during its calls; the library then starts a spare at once and returns
from the call that asked for it once the spare's CLI process exists, so that the CLI boots between the calls (see
``docs/benchmarks.md``, "Spares in a `run_sync` program"). Each round starts three programs, interleaved, against the
run's one offline backend: the library with its defaults (``bench/sync/ours.py``), the same with
``spare_sessions=0`` (every conversation a new CLI), and the raw SDK (``bench/sync/raw.py``: one ``asyncio.run()`` of
a client per conversation). Each program answers ``CALLS`` new conversations of the one-tool agent, a pause of
``BENCH_SYNC_PAUSE`` seconds (1 s by default) after each. The first call starts the program's first CLI; the second
takes the program's first spare, the one whose start reveals that the loop pauses (not head-started); the later ones
take head-started spares.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from bench._brain import expected_answer, prompt
from bench._core import CLIS_MAX, BenchContext, Metrics, Row, Suite, Target, Variant, check, compared, measured
from bench._mix_suites import TOOL_SYSTEM
from bench._process_suites import ROOT, compile_library, run_child

SCRIPTS = ROOT / "bench" / "sync"
CALLS = 6
"""New conversations per program."""
HEAD_STARTED = slice(2, None)
"""The calls that take a head-started spare (the third on)."""
RUN_IDS = [f"sync{index}" for index in range(CALLS)]
PAUSE = float(os.environ.get("BENCH_SYNC_PAUSE", "1.0"))
CLI_BOUND = 3


def call_metrics(report: dict[str, Any]) -> Metrics:
    """Each program's call times: the first (``first``), the second (``second``), the median of the head-started
    ones (``new``), and how many of those ran on a spare (``on_spare``); every answer checked."""
    calls: list[dict[str, Any]] = report["calls"]
    check(len(calls) == CALLS, f"the program made {len(calls)} calls, not {CALLS}")
    for call, run_id in zip(calls, RUN_IDS, strict=True):
        expected = expected_answer(calls=1, run_id=run_id)
        check(call["text"] == expected, f"call {run_id} answered {call['text']!r}, expected {expected!r}")
    seconds = [(call["end"] - call["start"]) / 1e9 for call in calls]
    return {
        "first": seconds[0],
        "second": seconds[1],
        "new": statistics.median(seconds[HEAD_STARTED]),
        "on_spare": float(sum(call["source"] == "spare" for call in calls[HEAD_STARTED])),
    }


async def program(command: Sequence[str], env: dict[str, str]) -> Metrics:
    """One round of one program, run in a new process."""
    return call_metrics(await run_child(command, env))


class SyncSuite(Suite):
    """A fresh synchronous program per round answering new conversations with ``run_sync``: the library with its
    spares, without them, and the raw SDK."""

    name = "sync"
    description = f"one fresh run_sync program per round: {CALLS} new conversations, {PAUSE:g} s apart"
    row_names = ("sync-new", "sync-new-raw", "sync-second", "sync-clis")
    default_repeat = 3
    needs_cli = False  # its programs start their own CLIs; every program gets one untimed round first

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        compile_library()
        env = {
            **os.environ,
            "BENCH_CLI_ENV": json.dumps(bench.env),
            "BENCH_SYNC_PROMPTS": json.dumps([prompt(calls=1, run_id=run_id) for run_id in RUN_IDS]),
            "BENCH_SYNC_PAUSE": str(PAUSE),
            "BENCH_TOOL_SYSTEM": TOOL_SYSTEM,
        }
        python = sys.executable
        variants: dict[str, Variant] = {
            "ours": lambda: program([python, str(SCRIPTS / "ours.py")], env),
            "fresh": lambda: program([python, str(SCRIPTS / "ours.py")], {**env, "BENCH_SYNC_SPARES": "0"}),
            "raw": lambda: program([python, str(SCRIPTS / "raw.py")], env),
        }
        for variant in variants.values():  # untimed: byte code and page cache warm for every program alike
            await variant()
        yield variants

    def rows(self, medians: dict[str, float]) -> list[Row]:
        head_started = f"calls {HEAD_STARTED.start + 1}-{CALLS}"
        spares_note = f"on a spare: {medians['ours.on_spare']:g} of {CALLS - HEAD_STARTED.start} (median)"
        clis = medians[f"ours.{CLIS_MAX}"]
        return [
            compared(
                medians,
                "sync-new",
                f"run_sync: new conversation ({head_started}, head-started spares) vs spare_sessions=0",
                "ours.new",
                "fresh.new",
                note=f"each program's median of {head_started}; {spares_note}",
            ),
            compared(
                medians,
                "sync-new-raw",
                f"run_sync: new conversation ({head_started}) vs the raw SDK",
                "ours.new",
                "raw.new",
                note="raw = asyncio.run() of a ClaudeSDKClient per conversation (connect, query, disconnect)",
            ),
            compared(
                medians,
                "sync-second",
                "run_sync: second new conversation (the first spare, not head-started) vs spare_sessions=0",
                "ours.second",
                "fresh.second",
            ),
            Row(
                key="sync-clis",
                name="run_sync: most CLI processes held at once by the program vs the raw SDK",
                **measured(medians, f"ours.{CLIS_MAX}", f"raw.{CLIS_MAX}"),
                unit="CLIs",
                target=Target(f"<= {CLI_BOUND} CLIs (ours)", CLI_BOUND),
                figure=clis,
                figure_text=f"{clis:g} CLIs",
            ),
        ]
