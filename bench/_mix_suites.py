"""The mix suite: one fresh program per round running a mix of agents, for this library, the raw SDK and the peer.

Each round starts every contender as a new process (``bench/mix/ours.py``, ``bench/mix/raw.py``,
``bench/node/mix.mjs``), interleaved, against the one offline backend of the run. The program runs five steps, a pause
after each: (a) a tool agent's run (one tool call; the program's first request), (b) a text agent's run (no tools,
another system prompt, the same model), (c) a follow-up of (b)'s conversation (the latest), (d) a new conversation of
the tool agent, (e) a brand-new model running the tool agent. Each step's wall time comes from the program; while it
runs, the benchmark's process sampler (``bench/_sampler.py``) counts the CLI processes under it and their summed RSS, so
each round gives the most CLIs and RSS held at any moment, and the CLIs and RSS held at the end of the pause after each
step (what the program holds idle).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench._brain import expected_answer, prompt
from bench._core import (
    CLIS_MAX,
    RSS_MAX,
    BenchContext,
    Metrics,
    Row,
    Suite,
    Target,
    Variant,
    check,
    compared,
    measured,
)
from bench._process_suites import PEER, PEER_DIR, ROOT, compile_library, peer_installed, run_child
from claudecode_model import ClaudeCodeModel

SCRIPTS = ROOT / "bench" / "mix"
PEER_SOURCE = ROOT / "bench" / "node" / "mix.mjs"

STEPS = ("tool", "text", "follow_up", "new_conversation", "new_model")
"""The program's steps, in order."""
RUN_IDS = dict(zip(STEPS, "abcde", strict=True))
CALLS = {step: 0 if step in ("text", "follow_up") else 1 for step in STEPS}
PROMPTS = {step: prompt(calls=CALLS[step], run_id=RUN_IDS[step]) for step in STEPS}
EXPECTED = {step: expected_answer(calls=CALLS[step], run_id=RUN_IDS[step]) for step in STEPS}
TOOL_SYSTEM = "You are the tool agent of a benchmark: call the probe tool as the prompt says."
TEXT_SYSTEM = "You are the text agent of a benchmark: answer in plain text."
PAUSE = float(os.environ.get("BENCH_MIX_PAUSE", "1.0"))
"""Seconds each program waits after a step, as a program between requests does (background work may run);
``BENCH_MIX_PAUSE`` overrides the default of 1 s (the smoke test shortens it)."""
CLI_BOUND = 3
RSS_BOUND_MIB = 750.0

STEP_NAMES = {
    "tool": "tool agent's run (1 tool call, the program's first request)",
    "text": "text agent's run (no tools, other system prompt)",
    "follow_up": "follow-up of the text agent's conversation",
    "new_conversation": "new conversation of the tool agent (same model)",
    "new_model": "brand-new model, the tool agent",
}
ROW_KEYS = {step: step.replace("_", "-") for step in STEPS}
PEER_TARGETS = {"follow_up": 0.2, "new_conversation": 0.3, "new_model": 0.9}
RAW_TARGETS = {"new_conversation": 0.2}


def step_metrics(report: dict[str, Any], bench: BenchContext) -> Metrics:
    """Each step's wall time (``<step>``), the CLIs and RSS at the end of the pause after it (``clis_after_<step>``,
    ``rss_after_<step>``) and the most during it (``clis_during_<step>``); every answer checked."""
    steps = report["steps"]
    check([step["name"] for step in steps] == list(STEPS), f"the program ran {[s['name'] for s in steps]}")
    metrics: Metrics = {}
    for step in steps:
        name = step["name"]
        check(step["text"] == EXPECTED[name], f"step {name} answered {step['text']!r}, expected {EXPECTED[name]!r}")
        metrics[name] = (step["end"] - step["start"]) / 1e9
        during = bench.sampler.window(step["start"], step["end"])
        after = bench.sampler.window(step["end"], step["idle_end"]).last_before(step["idle_end"])
        metrics[f"clis_during_{name}"] = float(during.max_clis)
        metrics[f"clis_after_{name}"] = float(after.clis) if after is not None else float("nan")
        metrics[f"rss_after_{name}"] = after.rss_mib if after is not None else float("nan")
    program = bench.sampler.window(steps[0]["start"], steps[-1]["idle_end"])
    metrics["program_rss_max_mib"] = max((s.tree_rss_mib for s in program.samples), default=0.0)
    return metrics


async def program(command: Sequence[str], env: dict[str, str], bench: BenchContext, *, cwd: Path = ROOT) -> Metrics:
    """One round of one contender: its program in a new process, and what the sampler saw of it."""
    report = await run_child(command, env, cwd=cwd)
    return step_metrics(report, bench)


class MixSuite(Suite):
    """A fresh program per round running a tool agent, a text agent, a follow-up, a new conversation and a
    brand-new model: step times, CLIs held and their RSS, against the raw SDK and the peer."""

    name = "mix"
    description = "one fresh program per round: tool agent, text agent, follow-up, new conversation, new model"
    row_names = (
        *(f"mix-{ROW_KEYS[step]}-peer" for step in STEPS),
        *(f"mix-{ROW_KEYS[step]}-raw" for step in STEPS),
        "mix-clis-peer",
        "mix-rss-peer",
        "mix-clis-raw",
        "mix-rss-raw",
    )
    default_repeat = 5
    needs_cli = False  # its programs start their own CLIs; every contender gets one untimed round first
    keep_series = True

    def __init__(self) -> None:
        self._with_peer = False

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        compile_library()
        env = {
            **os.environ,
            "BENCH_CLI_ENV": json.dumps(bench.env),
            "BENCH_CLI": str(ClaudeCodeModel().cli_path),
            "BENCH_MIX_PROMPTS": json.dumps(PROMPTS),
            "BENCH_MIX_PAUSE": str(PAUSE),
            "BENCH_TOOL_SYSTEM": TOOL_SYSTEM,
            "BENCH_TEXT_SYSTEM": TEXT_SYSTEM,
            "NO_COLOR": "1",
        }
        python = sys.executable
        variants: dict[str, Variant] = {
            "ours": lambda: program([python, str(SCRIPTS / "ours.py")], env, bench),
            "raw": lambda: program([python, str(SCRIPTS / "raw.py")], env, bench),
        }
        self._with_peer = peer_installed()
        if self._with_peer:
            shutil.copy2(PEER_SOURCE, PEER_DIR / PEER_SOURCE.name)
            node = ["node", str(PEER_DIR / PEER_SOURCE.name)]
            variants["peer"] = lambda: program(node, env, bench, cwd=PEER_DIR)
        else:
            print(
                f"  mix: {PEER} is not installed (scripts/install-node-bench): its rows are left out", file=sys.stderr
            )
        for variant in variants.values():  # untimed: byte code and page cache warm for every contender alike
            await variant()
        yield variants

    def rows(self, medians: dict[str, float]) -> list[Row]:
        rows: list[Row] = []
        if self._with_peer:
            rows += self._step_rows(medians, "peer", PEER, PEER_TARGETS)
        rows += self._step_rows(medians, "raw", "raw SDK", RAW_TARGETS)
        if self._with_peer:
            rows += self._process_rows(medians, "peer", PEER, targets=True)
        rows += self._process_rows(medians, "raw", "raw SDK", targets=not self._with_peer)
        return rows

    def _step_rows(self, medians: dict[str, float], other: str, label: str, targets: dict[str, float]) -> list[Row]:
        rows = []
        for step in STEPS:
            limit = targets.get(step)
            target = Target(f"<= {limit} x {label}", limit) if limit is not None else Target("reported")
            rows.append(
                compared(
                    medians,
                    f"mix-{ROW_KEYS[step]}-{other}",
                    f"mix: {STEP_NAMES[step]} vs {label}",
                    f"ours.{step}",
                    f"{other}.{step}",
                    target,
                )
            )
        return rows

    def _process_rows(self, medians: dict[str, float], other: str, label: str, *, targets: bool) -> list[Row]:
        after = ", ".join(
            f"{ROW_KEYS[step]} {medians[f'ours.clis_after_{step}']:g}/{medians[f'{other}.clis_after_{step}']:g}"
            for step in STEPS
        )
        clis, rss = medians[f"ours.{CLIS_MAX}"], medians[f"ours.{RSS_MAX}"]
        return [
            Row(
                key=f"mix-clis-{other}",
                name=f"mix: most CLI processes held at once by the program vs {label}",
                **measured(medians, f"ours.{CLIS_MAX}", f"{other}.{CLIS_MAX}"),
                unit="CLIs",
                target=Target(f"<= {CLI_BOUND} CLIs (ours)", CLI_BOUND) if targets else Target("reported"),
                figure=clis if targets else None,
                figure_text=f"{clis:g} CLIs" if targets else None,
                note=f"CLIs held after each step's pause (ours/{other}): {after}",
            ),
            Row(
                key=f"mix-rss-{other}",
                name=f"mix: most summed RSS of those CLIs vs {label}",
                **measured(medians, f"ours.{RSS_MAX}", f"{other}.{RSS_MAX}"),
                unit="MiB",
                target=Target(f"<= {RSS_BOUND_MIB:.0f} MiB (ours)", RSS_BOUND_MIB) if targets else Target("reported"),
                figure=rss if targets else None,
                figure_text=f"{rss:.0f} MiB" if targets else None,
                note=(
                    "the program's own process included (most): "
                    f"ours {medians['ours.program_rss_max_mib']:.0f} MiB, "
                    f"{other} {medians[f'{other}.program_rss_max_mib']:.0f} MiB"
                ),
            ),
        ]
