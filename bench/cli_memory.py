"""Resident memory of an idle Claude Code CLI as this library starts it, and what changes it.

Run it under ``scripts/loopback-only`` (the CLI talks to an offline backend on 127.0.0.1 only)::

    scripts/loopback-only .venv/bin/python -m bench.cli_memory --samples 5

Each sample starts a fresh model, brings one CLI to the state measured (idle after one turn, or a ready spare),
waits until its memory settles, and sums the ``VmRSS`` of the CLI's process tree (read from ``/proc``; shared pages
count in each process, as ``ps`` shows them). It prints the median, the lowest and the highest of the samples per
variant, in MB (10^6 bytes) and MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic_ai import Agent

from bench._core import live_descendants, status_kib
from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend

SETTLE_SECONDS = 3.0
"""Seconds to wait after the CLI went idle before reading its memory (its start-up work ends within a second)."""


@dataclass(frozen=True)
class Variant:
    """One way of starting the CLI: extra environment entries, tools or not, the state measured."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    tools: bool = False
    transport: str = "auto"
    state: str = "after-turn"  # or "spare"
    drop: tuple[str, ...] = ()
    """Entries of the offline backend's environment left out."""
    conversations: int = 1
    """New conversations run (each leaves its CLI idle: the model keeps that many)."""


@dataclass(frozen=True)
class Memory:
    """What a CLI's process tree holds, in KiB, and how long its start (and turn) took."""

    rss: int
    """Summed ``VmRSS``: what ``ps`` and ``top`` show."""
    anon: int
    """Summed ``RssAnon``: the private part (heap, JIT code); the rest is pages of the CLI's binary file, which
    every CLI started from the same file shares."""
    pss: int
    """Summed ``Pss``: each shared page counted once across the processes that map it (the binary's pages of
    several CLIs of one program count once)."""
    processes: int
    seconds: float


def pss_kib(pids: set[int]) -> int:
    """Summed ``Pss`` of ``pids`` (``/proc/<pid>/smaps_rollup``) in KiB."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def cli_roots() -> list[int]:
    """This process's children that run the CLI."""
    roots = []
    for pid in live_descendants():
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and argv and argv[0].endswith(b"claude"):
            roots.append(pid)
    return roots


def settled(seconds: float) -> Memory:
    """The memory of every CLI tree of this process, once it settles."""
    time.sleep(SETTLE_SECONDS)
    roots = cli_roots()
    pids: set[int] = set()
    for root in roots:
        pids |= {root} | live_descendants(root)
    return Memory(status_kib(pids), status_kib(pids, "RssAnon"), pss_kib(pids), len(roots), seconds)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def sample(backend: OfflineBackend, variant: Variant) -> Memory:
    """One fresh model brought to the variant's state."""
    model = ClaudeCodeModel(
        keep_sessions=variant.conversations,
        spare_sessions=1 if variant.state == "spare" else 0,
        env={**{k: v for k, v in backend.cli_env().items() if k not in variant.drop}, **variant.env},
        tool_transport=variant.transport,  # type: ignore[arg-type]
    )
    agent: Agent[None, str] = Agent(model, tools=[add] if variant.tools else [])
    try:
        started = time.perf_counter()
        if variant.state == "spare":
            if not await model.prewarm(agent):
                raise RuntimeError("no spare started")
        else:
            for _ in range(variant.conversations):
                await agent.run("hello")
        return await asyncio.to_thread(settled, time.perf_counter() - started)
    finally:
        await model.aclose()


def spare_command() -> tuple[list[str], dict[str, str]]:
    """The argv and environment of this process's one CLI."""
    root = cli_roots()[0]
    argv = [a.decode() for a in Path(f"/proc/{root}/cmdline").read_bytes().split(b"\0") if a]
    entries = Path(f"/proc/{root}/environ").read_bytes().split(b"\0")
    return argv, dict(e.decode().split("=", 1) for e in entries if b"=" in e)


async def parked(backend: OfflineBackend, await_claim: bool) -> Memory:
    """A CLI started with the argv and environment the library gives a spare, with ``--await-claim`` or not,
    after the SDK's ``initialize`` request."""
    model = ClaudeCodeModel(keep_sessions=1, spare_sessions=1, env=backend.cli_env())
    agent: Agent[None, str] = Agent(model)
    try:
        await model.prewarm(agent)
        argv, env = await asyncio.to_thread(spare_command)
    finally:
        await model.aclose()
    if await_claim:
        argv.append("--await-claim")
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        if process.stdin is None or process.stdout is None:
            raise RuntimeError("no pipes to the CLI")
        request = {"type": "control_request", "request_id": "init-1", "request": {"subtype": "initialize"}}
        process.stdin.write((json.dumps(request) + "\n").encode())
        answer = b""
        while b"control_response" not in answer:  # the CLI may print system events first
            answer = await process.stdout.readline()
            if not answer:
                raise RuntimeError("the CLI ended before it answered initialize")
        seconds = time.perf_counter() - started
        await asyncio.sleep(SETTLE_SECONDS)
        pids = {process.pid} | await asyncio.to_thread(live_descendants, process.pid)
        return Memory(status_kib(pids), status_kib(pids, "RssAnon"), pss_kib(pids), 1, seconds)
    finally:
        process.kill()
        await process.wait()


QUIET = (
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_TELEMETRY",
    "DISABLE_AUTOUPDATER",
    "DISABLE_ERROR_REPORTING",
    "ENABLE_TOOL_SEARCH",
)
"""The offline backend's quiet variables (see ``claudecode_model.testing.quiet_cli_env``)."""

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant("after-turn"),
        Variant("spare", state="spare"),
        Variant("two CLIs after a turn each", conversations=2),
        Variant("after-turn tools (sdk)", tools=True, transport="sdk"),
        Variant("after-turn tools (stdio bridge)", tools=True, transport="stdio"),
        Variant("spare tools (sdk)", tools=True, transport="sdk", state="spare"),
        Variant("after-turn without the quiet variables", drop=QUIET),
        Variant("after-turn BUN_OPTIONS=--smol", env={"BUN_OPTIONS": "--smol"}),
        Variant("after-turn BUN_GARBAGE_COLLECTOR_LEVEL=2", env={"BUN_GARBAGE_COLLECTOR_LEVEL": "2"}),
        Variant("after-turn BUN_IDLE_GC_SECONDS=1", env={"BUN_IDLE_GC_SECONDS": "1"}),
        Variant("after-turn BUN_JSC_useJIT=0", env={"BUN_JSC_useJIT": "0"}),
        Variant("after-turn MALLOC_ARENA_MAX=2", env={"MALLOC_ARENA_MAX": "2"}),
    ]
}


async def measure(names: list[str], samples: int, extra: list[tuple[str, dict[str, str]]], drop: list[str]) -> None:
    variants = [VARIANTS[n] for n in names if n != "parked"]
    variants += [Variant(f"after-turn {label}", env=env) for label, env in extra]
    variants += [Variant(f"after-turn without {name}", drop=(name,)) for name in drop]
    runs: list[tuple[str, Callable[[OfflineBackend], Awaitable[Memory]]]] = [
        (v.name, functools.partial(sample, variant=v)) for v in variants
    ]
    if "parked" in names:
        runs.append(("initialized, not parked", functools.partial(parked, await_claim=False)))
        runs.append(("parked (--await-claim)", functools.partial(parked, await_claim=True)))
    results: dict[str, list[Memory]] = {name: [] for name, _ in runs}
    async with OfflineBackend() as backend:
        for _ in range(samples):  # interleaved: a drift of the machine touches every variant alike
            for name, run in runs:
                results[name].append(await run(backend))
    version = await asyncio.to_thread(_cli_version)
    print(f"CLI {version}, {samples} samples each; medians (lowest-highest) of the CLI process tree's memory")
    print(
        f"{'variant':44} {'VmRSS MB':>17} {'VmRSS MiB':>9} {'RssAnon MB':>17} {'Pss MB':>17} {'procs':>5} {'run s':>6}"
    )
    for name, values in results.items():
        print(
            f"{name:44} {_spread([v.rss for v in values]):>17} {statistics.median(v.rss for v in values) / 1024:9.0f} "
            f"{_spread([v.anon for v in values]):>17} {_spread([v.pss for v in values]):>17} "
            f"{statistics.median(v.processes for v in values):5.0f} {statistics.median(v.seconds for v in values):6.2f}"
        )


def _spread(kib: list[int]) -> str:
    """Median (lowest-highest) of ``kib`` in MB."""
    mb = [k * 1024 / 1e6 for k in kib]
    return f"{statistics.median(mb):.0f} ({min(mb):.0f}-{max(mb):.0f})"


def _cli_version() -> str:
    import claude_agent_sdk

    cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=[], help=f"variants: {', '.join(VARIANTS)}, parked")
    parser.add_argument(
        "--env", nargs="*", default=[], help="more variants: NAME=VALUE added to the environment (after one turn)"
    )
    parser.add_argument("--drop", nargs="*", default=[], help="more variants: NAME left out of the environment")
    args = parser.parse_args()
    extra = [(item, dict([item.split("=", 1)])) for item in args.env]
    names = args.only or ([] if extra or args.drop else [*VARIANTS, "parked"])
    asyncio.run(measure(names, args.samples, extra, args.drop))
    sys.exit(0)


if __name__ == "__main__":
    main()
