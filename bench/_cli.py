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
from pathlib import Path
from typing import Any

from pydantic_ai.models.function import FunctionModel

from bench._agent_suites import AgentSuite, ConcurrencySuite, StreamSuite, ours_conversation, raw_conversation
from bench._brain import bench_brain
from bench._core import BenchContext, Row, Suite, SuiteResult, run_suite, settle, table_lines
from bench._ipc_suites import BridgeSpawnSuite, IPCRoundTripSuite
from bench._process_suites import NewProcessSuite
from bench._spare_suites import ManySuite, ModelCPUSuite, SpareSuite
from bench._store_suites import StoreSuite
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
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
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


async def run(args: argparse.Namespace) -> list[SuiteResult]:
    """Run the selected suites in this process, one after the other, against one offline backend."""
    suites, _ = _selection(args.only)
    results: list[SuiteResult] = []
    with OfflineBackend(FunctionModel(bench_brain)) as backend:
        bench = BenchContext(env=backend.cli_env())
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
    return results


def _report(results: list[SuiteResult], shown: set[str] | None) -> list[Row]:
    return [row for result in results for row in result.rows if shown is None or row.key in shown]


def _json_document(args: argparse.Namespace, results: list[SuiteResult], rows: list[Row]) -> dict[str, Any]:
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
        "suites": [
            {
                "name": result.name,
                "repeat": result.repeat,
                "seconds": result.seconds,
                "error": result.error,
                "samples": result.samples,
            }
            for result in results
        ],
        "rows": [row.as_dict() for row in rows],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (1 when a benchmark failed to do its work correctly)."""
    args = parse_args(argv)
    if os.environ.get("CLAUDECODE_MODEL_IN_NETNS") != "1":
        _progress("note: not inside scripts/loopback-only (the CLI still talks only to the local backend)")
    started = time.perf_counter()
    results = asyncio.run(run(args))
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
    if args.json is not None:
        args.json.write_text(json.dumps(_json_document(args, results, rows), indent=2, default=str) + "\n")
    return 1 if any(result.error is not None for result in results) else 0
