"""The measuring machinery: suites of interleaved variants, medians, rows with ratios and targets, the table."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from bench._sampler import Sampled, TreeSampler, own_cpu

Metrics = dict[str, float]
"""What one call of a variant measured: metric name -> seconds (or another unit a row says)."""

Variant = Callable[[], Awaitable[Metrics]]
"""One side of a comparison (ours or raw); each call does the work once and returns what it measured."""


class BenchError(RuntimeError):
    """A benchmark did not do its work correctly (wrong answer, missing event): its numbers mean nothing."""


def check(condition: bool, message: str) -> None:
    """Raise :class:`BenchError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise BenchError(message)


@dataclass(frozen=True)
class Target:
    """What a row promises: ``figure <= limit`` where the figure is computed by the row (a ratio or seconds)."""

    text: str
    limit: float | None = None
    """``None``: the row is only reported (or only checked for correctness)."""
    correctness: bool = False
    """The target is that every answer is correct (checked by the variants)."""


@dataclass
class Row:
    """One line of the table: our median, the raw SDK's median doing the same work, and the target check."""

    key: str
    """Short name, accepted by ``--only``."""
    name: str
    ours: float
    raw: float | None
    target: Target
    figure: float | None = None
    """The number compared with the target's limit (defaults to ``ours / raw``)."""
    figure_text: str | None = None
    """How to show the figure (defaults to ``x.xx x``)."""
    correct: bool = True
    """All work done correctly (every answer checked)."""
    unit: str = "s"
    note: str = ""
    pair: tuple[str, str] | None = None
    """The sample keys of ``ours`` and ``raw``: their per-repetition ratios give :attr:`ratio_range`."""
    ratio_range: tuple[float, float] | None = None
    """Lowest and highest ``ours / raw`` of the repetitions (each pair measured back to back)."""
    variants: tuple[str | None, str | None] | None = None
    """The variants whose processes the ours and raw columns show (defaults to the variants of :attr:`pair`)."""
    clis: tuple[float | None, float | None] = (None, None)
    """Median over the repetitions of the most CLI processes held at once while each variant ran (ours, raw)."""
    rss_mib: tuple[float | None, float | None] = (None, None)
    """Median of the most summed RSS of those CLIs and their children, MiB (ours, raw)."""

    @property
    def ratio(self) -> float | None:
        if self.raw is None or self.raw <= 0 or math.isnan(self.ours):
            return None
        return self.ours / self.raw

    @property
    def checked_figure(self) -> float | None:
        return self.figure if self.figure is not None else self.ratio

    @property
    def met(self) -> bool | None:
        """Whether the target is met (``None`` when the row is only reported and correct)."""
        if not self.correct:
            return False
        if self.target.correctness:
            return True
        if self.target.limit is None:
            return None
        figure = self.checked_figure
        return figure is not None and figure <= self.target.limit

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(ratio=self.ratio, figure=self.checked_figure, met=self.met)
        return data


class Measured(TypedDict):
    """The ``ours``, ``raw`` and ``pair`` fields of a :class:`Row` comparing two sampled variants."""

    ours: float
    raw: float
    pair: tuple[str, str]


def measured(medians: dict[str, float], ours_key: str, raw_key: str) -> Measured:
    """Row fields for the medians of the samples ``ours_key`` and ``raw_key``, compared pair by pair."""
    return {"ours": medians[ours_key], "raw": medians[raw_key], "pair": (ours_key, raw_key)}


REPORTED = Target("reported")
"""The target of a row that is only reported."""


def compared(
    medians: dict[str, float],
    key: str,
    name: str,
    ours_key: str,
    raw_key: str,
    target: Target = REPORTED,
    note: str = "",
) -> Row:
    """The row ``key`` (shown as ``name``) comparing the medians of the samples ``ours_key`` and ``raw_key``."""
    return Row(key=key, name=name, **measured(medians, ours_key, raw_key), target=target, note=note)


@dataclass
class SuiteResult:
    """Everything one suite measured, and its rows (or the error that stopped it)."""

    name: str
    repeat: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    series: dict[str, list[list[tuple[float, int, float]]]] = field(default_factory=dict)
    """Per variant, per measurement: every process sample (seconds since its start, CLIs, their RSS in MiB); kept
    for the suites that set ``keep_series``."""


class Suite:
    """A group of variants measured together, interleaved, and the rows they give.

    Subclasses set ``name`` and ``row_names`` (the keys of their rows), and implement :meth:`variants` (an async
    context manager that sets up what the variants share and yields them by name) and :meth:`rows` (medians ->
    rows).
    """

    name: str = ""
    description: str = ""
    row_names: Sequence[str] = ()
    default_repeat: int = 5
    """Repetitions unless ``--repeat`` says otherwise."""
    needs_cli: bool = True
    """The suite starts the Claude Code CLI (so the run warms it up first)."""
    settle_between: bool = True
    """Wait for every child process to end after each measurement (off when a suite keeps one running)."""
    keep_series: bool = False
    """Keep every process sample of every measurement in the JSON (not only the maxima)."""

    def variants(self, bench: BenchContext) -> AbstractAsyncContextManager[dict[str, Variant]]:
        raise NotImplementedError

    def rows(self, medians: dict[str, float]) -> list[Row]:
        raise NotImplementedError

    def derived(self, samples: dict[str, list[float]]) -> dict[str, list[float]]:
        """More samples computed from the measured ones, repetition by repetition (none by default)."""
        return {}


@dataclass
class BenchContext:
    """What every suite shares: the environment that points the CLI at the offline backend, and the sampler of the
    CLI processes this process holds (running through the whole run)."""

    env: dict[str, str]
    sampler: TreeSampler = field(default_factory=TreeSampler)


CLIS_MAX = "clis_max"
RSS_MAX = "rss_max_mib"
"""The metrics every measurement gets from the sampler: the most CLIs held at once, the most summed RSS (MiB)."""


def process_metrics(sampled: Sampled) -> Metrics:
    """The sampler's figures of one measurement."""
    return {CLIS_MAX: float(sampled.max_clis), RSS_MAX: sampled.max_rss_mib}


def _row_processes(row: Row, samples: dict[str, list[float]]) -> None:
    """Fill a row's CLI and RSS columns from the maxima its variants' measurements sampled."""
    variants = row.variants
    if variants is None and row.pair is not None:
        variants = (row.pair[0].split(".", 1)[0], row.pair[1].split(".", 1)[0])
    if variants is None:
        return

    def median_of(variant: str | None, metric: str) -> float | None:
        values = samples.get(f"{variant}.{metric}") if variant is not None else None
        return statistics.median(values) if values else None

    row.clis = (median_of(variants[0], CLIS_MAX), median_of(variants[1], CLIS_MAX))
    row.rss_mib = (median_of(variants[0], RSS_MAX), median_of(variants[1], RSS_MAX))


def live_descendants(pid: int | None = None) -> set[int]:
    """Every live (non-zombie) descendant process of ``pid`` (default: this process), from ``/proc``."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def status_kib(pids: set[int], field: str = "VmRSS") -> int:
    """Summed ``field`` (``VmRSS``, ``RssAnon``, ...) of the ``/proc/<pid>/status`` of ``pids``, in KiB (a process
    gone meanwhile counts 0)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


async def settle(within: float = 10.0) -> None:
    """Wait until every child process of ours has ended, so one measurement never overlaps another's teardown."""
    deadline = time.monotonic() + within
    while live_descendants():
        if time.monotonic() > deadline:
            raise BenchError(f"child processes still alive after {within:g} s: {sorted(live_descendants())}")
        await asyncio.sleep(0.01)


def paired_ratio_range(ours: Sequence[float], raw: Sequence[float]) -> tuple[float, float] | None:
    """The lowest and highest per-repetition ratio ``ours[i] / raw[i]``."""
    ratios = [a / b for a, b in zip(ours, raw, strict=True) if b > 0]
    return (min(ratios), max(ratios)) if ratios else None


def interleaved_order(names: Sequence[str], rep: int) -> list[str]:
    """The variants of repetition ``rep``: every variant once, the starting one rotating (A B, B A, A B, ...)."""
    shift = rep % len(names)
    return [*names[shift:], *names[:shift]]


async def run_suite(suite: Suite, bench: BenchContext, repeat: int, progress: Callable[[str], None]) -> SuiteResult:
    """Run every variant of ``suite`` ``repeat`` times, interleaved, and compute its rows from the medians."""
    result = SuiteResult(name=suite.name, repeat=repeat)
    started = time.perf_counter()
    try:
        async with suite.variants(bench) as variants:
            names = list(variants)
            for rep in range(repeat):
                for name in interleaved_order(names, rep):
                    # Every measurement starts from a collected heap: a full collection (about 0.1 s with
                    # pydantic-ai, the SDK and the backend loaded) falls due after enough allocations by anyone in
                    # the process, and would land in one variant's window or the other's by chance.
                    gc.collect()
                    bench.sampler.sample_now()
                    start = time.monotonic_ns()
                    metrics = await variants[name]()
                    end = time.monotonic_ns()
                    bench.sampler.sample_now()
                    sampled = bench.sampler.window(start, end + 1)
                    metrics = {**metrics, **process_metrics(sampled)}
                    if suite.keep_series:
                        series = [((s.at - start) / 1e9, s.clis, round(s.rss_mib, 1)) for s in sampled.samples]
                        result.series.setdefault(name, []).append(series)
                    for key, value in metrics.items():
                        result.samples.setdefault(f"{name}.{key}", []).append(value)
                    if suite.settle_between:
                        await settle()
                progress(f"{suite.name}: repetition {rep + 1}/{repeat} done")
        result.samples.update(suite.derived(result.samples))
        medians = {key: statistics.median(values) for key, values in result.samples.items()}
        result.rows = suite.rows(medians)
        for row in result.rows:
            if row.pair is not None:
                row.ratio_range = paired_ratio_range(result.samples[row.pair[0]], result.samples[row.pair[1]])
            _row_processes(row, result.samples)
    except Exception as error:  # a failed suite is reported, the others still run
        result.error = f"{type(error).__name__}: {error}"
        result.rows = [
            Row(key=row, name=row, ours=math.nan, raw=None, target=Target("-"), correct=False, note=result.error)
            for row in suite.row_names
        ]
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class Lap:
    """Wall-clock and CPU time (of this whole process: our code, the SDK, and the backend's thread; not the process
    sampler's thread) of one step."""

    wall: float = 0.0
    cpu: float = 0.0


class Stopwatch:
    """Measures consecutive steps: ``lap()`` returns the time since the previous ``lap()`` (or creation)."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = own_cpu()

    def lap(self) -> Lap:
        wall, cpu = time.perf_counter(), own_cpu()
        lap = Lap(wall - self._wall, cpu - self._cpu)
        self._wall, self._cpu = wall, cpu
        return lap


def turn_metrics(cold: Lap, warm: Sequence[Lap], warm_many: Sequence[Lap], extra_calls: int) -> Metrics:
    """The metrics of a conversation: the cold turn, the follow-ups with one call and those with
    ``1 + extra_calls`` calls (medians), and the slope per extra call: the median of the pairs' slopes
    (``warm_many[i] - warm[i]``, turns run back to back), so that one turn slowed by a load spike moves neither."""

    def slope(of: Callable[[Lap], float]) -> float:
        return statistics.median(of(many) - of(one) for one, many in zip(warm, warm_many, strict=True)) / extra_calls

    return {
        "cold": cold.wall,
        "warm": statistics.median(lap.wall for lap in warm),
        "warm_many": statistics.median(lap.wall for lap in warm_many),
        "slope": slope(lambda lap: lap.wall),
        "cpu_cold": cold.cpu,
        "cpu_warm": statistics.median(lap.cpu for lap in warm),
        "cpu_slope": slope(lambda lap: lap.cpu),
    }


# --- presentation ---------------------------------------------------------------------------------------------


def format_value(value: float | None, unit: str) -> str:
    """Seconds as ms (or s above 10 s); other units as they are."""
    if value is None or math.isnan(value):
        return "-"
    if unit != "s":
        return f"{value:.0f} {unit}" if abs(value) >= 1000 else f"{value:.3g} {unit}"
    if value >= 10:
        return f"{value:.2f} s"
    if value >= 0.0995:
        return f"{value * 1000:.0f} ms"
    if value >= 0.000995:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1e6:.0f} us"


def _pair_text(values: tuple[float | None, float | None], pattern: str) -> str:
    """``ours / raw`` of a process column; ``-`` where a side was not sampled."""
    if values == (None, None):
        return "-"
    return " / ".join("-" if value is None else pattern.format(value) for value in values)


def _met_text(row: Row) -> str:
    if not row.correct:
        return "FAILED"
    match row.met:
        case True:
            return "yes"
        case False:
            return "NO"
        case None:
            return "(reported)"


def table_lines(rows: Sequence[Row], *, markdown: bool = False) -> list[str]:
    """The results table: benchmark, ours, raw, ours/raw (and its per-repetition range), the CLIs held and their RSS
    (ours / raw), target, figure, met."""
    header = [
        "benchmark",
        "ours (median)",
        "raw SDK (median)",
        "ours / raw",
        "range",
        "CLIs held (max) ours/raw",
        "RSS (max, MiB) ours/raw",
        "target",
        "measured",
        "met",
    ]
    body: list[list[str]] = []
    for row in rows:
        ratio = row.ratio
        figure = row.checked_figure
        compared = row.target.limit is not None or row.figure is not None
        figure_text = row.figure_text or (f"{figure:.2f} x" if figure is not None and compared else "-")
        body.append(
            [
                row.name,
                format_value(row.ours, row.unit),
                format_value(row.raw, row.unit),
                f"{ratio:.2f} x" if ratio is not None else "-",
                f"{row.ratio_range[0]:.2f}-{row.ratio_range[1]:.2f}" if row.ratio_range and row.correct else "-",
                _pair_text(row.clis, "{:g}"),
                _pair_text(row.rss_mib, "{:.0f}"),
                row.target.text,
                figure_text if row.correct else "-",
                _met_text(row),
            ]
        )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return lines
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]
    numeric = {1, 2, 3, 4, 5, 6, 8}

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]) for i, cell in enumerate(cells)
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [line(header), rule, *(line(cells) for cells in body)]


async def aclose(iterator: AsyncIterator[Any]) -> None:
    """Close an async generator typed as a plain async iterator (``query()``'s messages)."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
