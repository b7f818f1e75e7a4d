"""How many Claude Code CLI processes a program holds, and their memory, sampled from ``/proc`` while it runs.

A background thread wakes every ``interval`` seconds, finds the live descendants of a root process (default: this
one) and records how many of them are CLIs (``comm`` is ``claude``, the bundled binary's name; a ``claude`` child of
a CLI is the CLI forking to run a command, caught before its ``exec``, and counts neither as a CLI nor in the memory)
and the summed resident set size of the CLIs and everything they started (their MCP servers, shells). It keeps the
whole series, so a suite can also look at a window of it (a step of a program, the idle time after a burst).

Kept cheap: a process's parent is read once, when the process is first seen (``/proc/<pid>/stat``); each sample then
lists ``/proc`` and reads ``comm`` and ``statm`` of the tree's processes only. The thread's own CPU time is
measured (``time.thread_time()``) and reported with the results.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from dataclasses import dataclass, field

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
CLI_NAMES = frozenset({"claude"})
"""``comm`` of a Claude Code CLI process: the bundled binary is ``claude`` (the SDK and the peer both run it)."""


_cpu_lock = threading.Lock()
_running: TreeSampler | None = None
_retired_cpu = 0.0
"""CPU seconds of sampling threads that have ended (``time.process_time()`` still counts them)."""


def own_cpu() -> float:
    """``time.process_time()`` less what the sampling threads used: the CPU of the work being measured."""
    with _cpu_lock:
        clock = _running._clock if _running is not None else None
        sampled = time.clock_gettime(clock) if clock is not None else 0.0
        return time.process_time() - sampled - _retired_cpu


@dataclass(frozen=True)
class Sample:
    """What the tree held at one moment."""

    at: int
    """``time.monotonic_ns()`` of the sample (the clock child processes report too)."""
    clis: int
    """Live CLI processes among the descendants."""
    rss_mib: float
    """Summed RSS of those CLIs and of their descendants (MiB)."""
    tree_rss_mib: float
    """Summed RSS of every descendant of the root (MiB): in the mix suite, the program and its CLIs."""


@dataclass
class Sampled:
    """A series of samples and what taking them cost."""

    samples: list[Sample] = field(default_factory=list)
    cpu: float = 0.0
    """CPU seconds of the sampling thread."""

    @property
    def max_clis(self) -> int:
        return max((sample.clis for sample in self.samples), default=0)

    @property
    def max_rss_mib(self) -> float:
        return max((sample.rss_mib for sample in self.samples), default=0.0)

    def window(self, start: int, end: int) -> list[Sample]:
        """The samples taken from ``start`` to ``end`` (``time.monotonic_ns()`` values)."""
        return [sample for sample in self.samples if start <= sample.at <= end]

    def last_before(self, moment: int) -> Sample | None:
        """The last sample taken at or before ``moment``."""
        earlier = [sample for sample in self.samples if sample.at <= moment]
        return earlier[-1] if earlier else None


@dataclass
class _Process:
    parent: int
    is_cli: bool = False
    rss_pages: int = 0


class TreeSampler:
    """Samples the CLIs under ``root`` every ``interval`` seconds from :meth:`start` to :meth:`stop`.

    One sampler runs through a whole benchmark run; each measurement takes its window of the series
    (:meth:`window`). :meth:`sample_now` adds a sample from the calling thread (between measurements, so that a short
    one still has a sample at its start and end)."""

    def __init__(self, root: int | None = None, interval: float = 0.02, cli_names: frozenset[str] = CLI_NAMES) -> None:
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self.cli_names = cli_names
        self._parents: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._clock: int | None = None
        self._samples: list[Sample] = []
        self._cpu = 0.0
        self._lock = threading.Lock()

    def start(self) -> TreeSampler:
        global _running
        self._thread = threading.Thread(target=self._run, name="bench-tree-sampler", daemon=True)
        self._thread.start()
        assert self._thread.ident is not None
        self._clock = time.pthread_getcpuclockid(self._thread.ident)
        _running = self
        return self

    def stop(self) -> Sampled:
        """Stop sampling and return the whole series."""
        global _running, _retired_cpu
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with _cpu_lock:
            _retired_cpu += self._cpu
            self._clock = None
            if _running is self:
                _running = None
        return self.snapshot()

    def thread_cpu(self) -> float:
        """CPU seconds the sampling thread has used so far."""
        with _cpu_lock:
            return time.clock_gettime(self._clock) if self._clock is not None else self._cpu

    def snapshot(self) -> Sampled:
        """The samples so far (sampling goes on)."""
        with self._lock:
            samples = list(self._samples)
        return Sampled(samples, self.thread_cpu())

    def window(self, start: int, end: int) -> Sampled:
        """The samples from ``start`` to ``end`` (``time.monotonic_ns()``), with the last one before ``start``."""
        with self._lock:  # the series is in time order: every sample is taken and appended under the lock
            first = bisect.bisect_left(self._samples, start, key=_at)
            last = bisect.bisect_right(self._samples, end, key=_at)
            samples = self._samples[max(first - 1, 0) : last]
        return Sampled(samples, self.thread_cpu())

    def sample_now(self) -> Sample:
        """Take a sample in the calling thread and add it to the series."""
        with self._lock:
            sample = self.sample()
            self._samples.append(sample)
            return sample

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self._samples.append(self.sample())
            self._stop.wait(self.interval)
        self._cpu = time.thread_time()

    def sample(self) -> Sample:
        """One sample, now (callers hold the lock: the parent cache is shared)."""
        tree = self._tree()
        # A CLI's child named like it is a fork not yet exec'd (it spawns a command: for some milliseconds the child
        # is a copy sharing its parent's pages): neither another CLI nor more memory.
        forks = {pid for pid, process in tree.items() if process.is_cli and _is_cli(tree, process.parent)}
        clis = [pid for pid, process in tree.items() if process.is_cli and pid not in forks]
        cli_pages = sum(tree[pid].rss_pages for pid in _with_descendants(clis, tree) - forks)
        return Sample(
            at=time.monotonic_ns(),
            clis=len(clis),
            rss_mib=cli_pages * PAGE_BYTES / MIB,
            tree_rss_mib=sum(process.rss_pages for process in tree.values()) * PAGE_BYTES / MIB,
        )

    def _tree(self) -> dict[int, _Process]:
        """The live descendants of the root: parent, whether a CLI, resident pages."""
        pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
        for gone in self._parents.keys() - pids:
            del self._parents[gone]
        for pid in pids - self._parents.keys():
            parent = _parent(pid)
            if parent is not None:
                self._parents[pid] = parent
        children: dict[int, list[int]] = {}
        for pid, parent in self._parents.items():
            children.setdefault(parent, []).append(pid)
        members: set[int] = set()
        frontier = [self.root]
        while frontier:
            frontier = [child for pid in frontier for child in children.get(pid, ()) if child not in members]
            members.update(frontier)
        tree: dict[int, _Process] = {}
        for pid in members:
            process = _process(pid, self._parents[pid], self.cli_names)
            if process is not None:
                tree[pid] = process
        return tree


def _read(path: str) -> bytes:
    """A small ``/proc`` file in one read (cheaper than ``Path.read_text()``, which this thread does often)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _parent(pid: int) -> int | None:
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split(maxsplit=2)[1])


def _process(pid: int, parent: int, cli_names: frozenset[str]) -> _Process | None:
    """Name and resident pages of a live process (``None``: gone or a zombie, whose memory map is empty).

    ``comm`` and ``statm`` rather than ``stat``: the kernel sums every thread of a process for ``stat``, and a CLI
    has dozens."""
    try:
        name = _read(f"/proc/{pid}/comm").strip().decode(errors="replace")
        size, resident = _read(f"/proc/{pid}/statm").split()[:2]
    except (OSError, ValueError):
        return None
    if size == b"0":
        return None
    return _Process(parent=parent, is_cli=name in cli_names, rss_pages=int(resident))


def _at(sample: Sample) -> int:
    return sample.at


def _is_cli(tree: dict[int, _Process], pid: int) -> bool:
    process = tree.get(pid)
    return process is not None and process.is_cli


def _with_descendants(roots: list[int], tree: dict[int, _Process]) -> set[int]:
    found = set(roots)
    frontier = set(roots)
    while frontier:
        frontier = {pid for pid, process in tree.items() if process.parent in frontier} - found
        found |= frontier
    return found
