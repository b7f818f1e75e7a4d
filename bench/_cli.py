"""``python -m bench``: run the benchmarks against the offline backend and print the table."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.models.function import FunctionModel

from bench._agent_suites import AgentSuite, ConcurrencySuite, StreamSuite, ours_conversation, raw_conversation
from bench._brain import bench_brain
from bench._core import BenchContext, Row, Suite, SuiteResult, run_suite, settle, table_lines
from bench._ipc_suites import BridgeSpawnSuite, IPCRoundTripSuite
from bench._lean_suites import LeanSuite
from bench._mix_suites import MixSuite
from bench._process_suites import NewProcessSuite
from bench._sampler import TreeSampler
from bench._spare_suites import ManySuite, ModelCPUSuite, SpareSuite
from bench._store_suites import StoreSuite
from bench._sync_suites import SyncSuite
from bench._temporal_suites import TemporalSuite
from claudecode_model.testing import OfflineBackend

SUITES: tuple[Suite, ...] = (
    AgentSuite(),
    StreamSuite(),
    ConcurrencySuite(),
    SpareSuite(),
    ManySuite(),
    ModelCPUSuite(),
    BridgeSpawnSuite(),
    IPCRoundTripSuite(),
    StoreSuite(),
    TemporalSuite(),
    NewProcessSuite(),
    MixSuite(),
    LeanSuite(),
    SyncSuite(),
)


def _names() -> list[str]:
    return list(dict.fromkeys(name for suite in SUITES for name in (suite.name, *suite.row_names)))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=(
            "Benchmarks of claudecode-model against the raw claude-agent-sdk doing the same work, on the offline "
            "backend (zero think time), in one process; repetitions interleaved, medians reported. Run it inside "
            "scripts/loopback-only."
        ),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        help="repetitions of every variant (default: 5, and 3 for the costly concurrency suite)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=_names(),
        metavar="NAME",
        help="run only this suite or row (repeatable): " + ", ".join(_names()),
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every sample and row to PATH")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=0.02,
        metavar="SECONDS",
        help="how often the CLI processes held and their RSS are sampled (default: 0.02)",
    )
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.sample_interval <= 0:
        parser.error("--sample-interval must be positive")
    return args


def _selection(only: list[str] | None) -> tuple[list[Suite], set[str] | None]:
    """The suites to run and the row keys to show (``None``: all rows of those suites)."""
    if not only:
        return list(SUITES), None
    suites = [suite for suite in SUITES if suite.name in only or set(suite.row_names) & set(only)]
    if any(suite.name in only for suite in suites):
        rows = {row for suite in suites for row in suite.row_names if suite.name in only} | set(only)
        return suites, rows
    return suites, set(only)


async def _warm_up(bench: BenchContext) -> None:
    """One untimed conversation each way (in-process and bridge), so no measured run pays first-use costs."""
    await raw_conversation(bench)
    await ours_conversation(bench, "auto")
    await ours_conversation(bench, "auto-stdio")
    await settle()


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


@dataclass
class Run:
    """What a run measured, and what sampling its processes cost."""

    results: list[SuiteResult]
    samples: int
    sampler_cpu: float
    """CPU seconds of the sampling thread over the whole run (not counted in the CPU rows)."""
    seconds: float


async def run(args: argparse.Namespace) -> Run:
    """Run the selected suites in this process, one after the other, against one offline backend, sampling the CLI
    processes this process holds throughout."""
    suites, _ = _selection(args.only)
    results: list[SuiteResult] = []
    sampler = TreeSampler(interval=args.sample_interval)
    started = time.perf_counter()
    with OfflineBackend(FunctionModel(bench_brain)) as backend:
        bench = BenchContext(env=backend.cli_env(), sampler=sampler.start())
        try:
            await _run_suites(suites, bench, backend, args, results)
        finally:
            sampled = sampler.stop()
    return Run(results, len(sampled.samples), sampled.cpu, time.perf_counter() - started)


async def _run_suites(
    suites: list[Suite],
    bench: BenchContext,
    backend: OfflineBackend,
    args: argparse.Namespace,
    results: list[SuiteResult],
) -> None:
    if any(suite.needs_cli for suite in suites):
        _progress("warming up")
        await _warm_up(bench)
    for suite in suites:
        _progress(f"{suite.name}: {suite.description}")
        result = await run_suite(suite, bench, args.repeat or suite.default_repeat, _progress)
        if backend.errors and result.error is None:
            result.error = f"the offline backend's brain failed: {backend.errors[-1]}"
        backend.reset()
        if result.error is not None:
            _progress(f"{suite.name} FAILED: {result.error}")
        results.append(result)


def _report(results: list[SuiteResult], shown: set[str] | None) -> list[Row]:
    return [row for result in results for row in result.rows if shown is None or row.key in shown]


def _sampler_text(measured: Run) -> str:
    per_sample = measured.sampler_cpu / measured.samples if measured.samples else 0.0
    share = measured.sampler_cpu / measured.seconds if measured.seconds else 0.0
    return (
        f"process sampler: {measured.samples} samples, {measured.sampler_cpu:.2f} s CPU "
        f"({per_sample * 1e3:.2f} ms a sample, {share:.1%} of one CPU; left out of the CPU rows)"
    )


def _json_document(args: argparse.Namespace, measured: Run, rows: list[Row]) -> dict[str, Any]:
    import claude_agent_sdk
    import pydantic_ai

    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
        "versions": {"claude-agent-sdk": claude_agent_sdk.__version__, "pydantic-ai": pydantic_ai.__version__},
        "sampler": {
            "interval": args.sample_interval,
            "samples": measured.samples,
            "cpu": measured.sampler_cpu,
            "seconds": measured.seconds,
        },
        "suites": [
            {
                "name": result.name,
                "repeat": result.repeat,
                "seconds": result.seconds,
                "error": result.error,
                "samples": result.samples,
                "process_series": result.series,
            }
            for result in measured.results
        ],
        "rows": [row.as_dict() for row in rows],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (1 when a benchmark failed to do its work correctly)."""
    args = parse_args(argv)
    if os.environ.get("CLAUDECODE_MODEL_IN_NETNS") != "1":
        _progress("note: not inside scripts/loopback-only (the CLI still talks only to the local backend)")
    started = time.perf_counter()
    measured = asyncio.run(run(args))
    results = measured.results
    _, shown = _selection(args.only)
    rows = _report(results, shown)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    repeats = ", ".join(f"{result.name} x{result.repeat}" for result in results)
    print(
        f"claudecode-model benchmarks (medians; repetitions: {repeats}); "
        f"{time.perf_counter() - started:.0f} s; {os.cpu_count()} CPUs, load average {load}"
    )
    print("\n".join(table_lines(rows, markdown=args.markdown)))
    for result in results:
        if result.error is not None:
            print(f"{result.name} failed: {result.error}")
    for row in rows:
        if row.note and row.correct:
            print(f"{row.key}: {row.note}")
    print(_sampler_text(measured))
    if args.json is not None:
        args.json.write_text(json.dumps(_json_document(args, measured, rows), indent=2, default=str) + "\n")
    return 1 if any(result.error is not None for result in results) else 0
