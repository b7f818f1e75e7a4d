"""The new-process suite: the first answer of a fresh interpreter, for this library, the raw SDK and the peer.

Each repetition starts every contender as a new process (``bench/new_process/*.py``, ``bench/node/first_answer.mjs``),
interleaved, against the one offline backend of the run: a first run of a one-tool agent, from process start to the
answer in hand (the interpreter's start and every import included) and the first call alone. A process that does
the same without this library runs too (``floor.py``: pydantic-ai's import and first run on a ``FunctionModel``,
then the SDK's import), so that the rows can show which part of a gap no change of this library can remove: each
target's row has a floor row beside it (the floor against the same contender). This library's byte code is
compiled first, as installing it does (pip compiles a wheel's modules; the SDK's and pydantic-ai's are compiled in
the environment), so that an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` does not compile its modules in
every process. The peer is ``ai-sdk-provider-claude-code`` (the Vercel AI SDK provider over the TypeScript Agent
SDK, installed from ``bench/node/package-lock.json`` by ``scripts/install-node-bench``), with its
``createAiSdkMcpServer`` tool bridge; every contender runs the CLI bundled with claude-agent-sdk.
"""

from __future__ import annotations

import asyncio
import compileall
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import claudecode_model
from bench._brain import expected_answer, prompt
from bench._core import BenchContext, BenchError, Metrics, Row, Suite, Target, Variant, check, compared
from claudecode_model import ClaudeCodeModel

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "bench" / "new_process"
PEER_SOURCE = ROOT / "bench" / "node" / "first_answer.mjs"
PEER_DIR = ROOT / ".cache" / "node-bench"
"""Where ``scripts/install-node-bench`` installs the peer (``npm ci`` of ``bench/node/package-lock.json``)."""
CHILD_TIMEOUT = 120.0

PEER = "ai-sdk-provider-claude-code"


LIBRARY = Path(claudecode_model.__file__).parent


def compile_library(package: Path = LIBRARY) -> None:
    """Compile the library's modules to byte code beside them, as installing its wheel does."""
    if not compileall.compile_dir(package, quiet=1):
        raise BenchError(f"could not compile the byte code of {package}")


def peer_installed() -> bool:
    """Whether Node.js and the peer's packages are there (otherwise the suite runs without the peer)."""
    return shutil.which("node") is not None and (PEER_DIR / "node_modules" / PEER).is_dir()


async def run_child(command: Sequence[str], env: dict[str, str], *, cwd: Path = ROOT) -> dict[str, Any]:
    """Start ``command`` as a new process and return what it printed (one JSON line) with ``spawned`` (the
    ``time.monotonic_ns()`` just before the start) added."""
    spawned = time.monotonic_ns()
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), CHILD_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    lines = stdout.decode().strip().splitlines()
    if process.returncode != 0 or not lines:
        raise BenchError(f"{' '.join(command)} failed ({process.returncode}): {stderr.decode()[-2000:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    report["spawned"] = spawned
    return report


def _seconds(later: int, earlier: int) -> float:
    return (later - earlier) / 1e9


async def first_answer(command: Sequence[str], env: dict[str, str], *, cwd: Path = ROOT) -> Metrics:
    """One new process's first answer: start -> answer (``total``), the first call alone (``call``) and start ->
    ready for the call (``ready``: interpreter and imports), and the process's CPU seconds until the answer
    (``cpu``) and in the call (``cpu_call``; not the CLI's); the answer checked."""
    report = await run_child(command, env, cwd=cwd)
    expected = expected_answer(calls=1)
    check(report.get("text") == expected, f"{command[-1]} answered {report.get('text')!r}, expected {expected!r}")
    return {
        "total": _seconds(report["answer"], report["spawned"]),
        "call": _seconds(report["answer"], report["call"]),
        "ready": _seconds(report["ready"], report["spawned"]),
        "cpu": report["cpu"],
        "cpu_call": report["cpu_call"],
    }


async def floor(env: dict[str, str]) -> Metrics:
    """The same process without this library (``floor.py``): start -> pydantic-ai imported (``ready``), the first
    run of the agent on a ``FunctionModel`` (``first_run``: pydantic-ai's own first-use work) and the import of
    claude_agent_sdk after them (``sdk_import``), and the CPU seconds of it all (``cpu``)."""
    report = await run_child([sys.executable, str(SCRIPTS / "floor.py")], env)
    return {
        "ready": _seconds(report["ready"], report["spawned"]),
        "first_run": report["first_run"] / 1e9,
        "sdk_import": report["sdk_import"] / 1e9,
        "cpu": report["cpu"],
    }


class NewProcessSuite(Suite):
    """The first answer of a new process, against the raw SDK and the peer, with the floors that explain it."""

    name = "new-process"
    description = "first answer of a fresh interpreter: ours, the raw SDK, ai-sdk-provider-claude-code (Node)"
    row_names = (
        "new-first-call",
        "new-first-call-overlap",
        "new-first-call-eager",
        "new-first-call-peer",
        "new-first-call-floor",
        "new-first-call-floor-raw",
        "new-first-call-floor-peer",
        "new-answer",
        "new-answer-peer",
        "new-answer-floor",
        "new-answer-floor-raw",
        "new-answer-floor-peer",
        "new-answer-eager",
        "new-ready",
        "new-ready-peer",
        "new-ready-framework",
        "new-cpu",
        "new-cpu-floor",
        "new-cpu-peer",
    )
    default_repeat = 7
    needs_cli = False  # its processes start their own CLIs; every contender gets one untimed run first

    def __init__(self) -> None:
        self._with_peer = False

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        compile_library()
        cli = ClaudeCodeModel().cli_path  # the CLI bundled with claude-agent-sdk, which the raw SDK runs too
        env = {
            **os.environ,
            "BENCH_CLI_ENV": json.dumps(bench.env),
            "BENCH_PROMPT": prompt(calls=1),
            "BENCH_CLI": str(cli),
            "NO_COLOR": "1",
        }
        python = sys.executable
        variants: dict[str, Variant] = {
            "ours": lambda: first_answer([python, str(SCRIPTS / "ours.py")], env),
            "sequential": lambda: first_answer([python, str(SCRIPTS / "ours.py")], {**env, "BENCH_SDK_IN_CALL": "1"}),
            "eager": lambda: first_answer([python, str(SCRIPTS / "ours.py")], {**env, "BENCH_SDK_BEFORE_CALL": "1"}),
            "raw": lambda: first_answer([python, str(SCRIPTS / "raw.py")], env),
            "floor": lambda: floor(env),
        }
        self._with_peer = peer_installed()
        if self._with_peer:
            shutil.copy2(PEER_SOURCE, PEER_DIR / PEER_SOURCE.name)
            node = ["node", str(PEER_DIR / PEER_SOURCE.name)]
            variants["peer"] = lambda: first_answer(node, env, cwd=PEER_DIR)
        else:
            print(
                f"  new-process: {PEER} is not installed (scripts/install-node-bench): its rows are left out",
                file=sys.stderr,
            )
        for variant in variants.values():  # untimed: byte code and page cache warm for every contender alike
            await variant()
        yield variants

    def derived(self, samples: dict[str, list[float]]) -> dict[str, list[float]]:
        """Per repetition, the least this library's first call can take: the raw SDK's first call, plus the SDK's
        import (after pydantic-ai's) and pydantic-ai's own first run, both of which this library's first call
        contains; and the least a whole new process can take: that plus importing pydantic-ai. The same for the
        process's CPU until the answer: the floor process's, plus the raw SDK's in its first call."""
        parts = zip(samples["raw.call"], samples["floor.sdk_import"], samples["floor.first_run"], strict=True)
        call = [sum(values) for values in parts]
        return {
            "least.call": call,
            "least.total": [a + b for a, b in zip(samples["floor.ready"], call, strict=True)],
            "least.cpu": [a + b for a, b in zip(samples["floor.cpu"], samples["raw.cpu_call"], strict=True)],
        }

    def rows(self, medians: dict[str, float]) -> list[Row]:
        rows = [
            compared(
                medians,
                "new-first-call",
                "new process: first call (agent.run_sync, 1 tool call) vs raw SDK's first query()",
                "ours.call",
                "raw.call",
                Target("<= 1.0 x raw", 1.0),
                note="raw = query() with a create_sdk_mcp_server tool; claude_agent_sdk imported before the call",
            ),
            compared(
                medians,
                "new-first-call-overlap",
                "new process: first call vs the same with claude_agent_sdk imported first in the call",
                "ours.call",
                "sequential.call",
                note="raw column: the CLI starts after the SDK's import (no early start), as before issue 29's item 1",
            ),
            compared(
                medians,
                "new-first-call-eager",
                "new process: first call with claude_agent_sdk imported before it vs raw SDK's first query()",
                "eager.call",
                "raw.call",
                note="ours column: the SDK imported with the other imports, as ClaudeCodeModel() could",
            ),
            compared(
                medians,
                "new-first-call-floor",
                "new process: first call vs raw first query() + SDK import + pydantic-ai's first run",
                "ours.call",
                "least.call",
                note="raw column + import claude_agent_sdk + the agent's first run on a FunctionModel (no CLI)",
            ),
            compared(
                medians,
                "new-first-call-floor-raw",
                "new process: the first call's floor vs raw SDK's first query()",
                "least.call",
                "raw.call",
                note="ours column: the raw column of new-first-call-floor (the same work without this library)",
            ),
            compared(
                medians,
                "new-answer",
                "new process: start -> first answer vs raw SDK",
                "ours.total",
                "raw.total",
                Target("<= 1.0 x raw", 1.0),
            ),
            compared(
                medians,
                "new-answer-floor",
                "new process: start -> first answer vs the same floor + import pydantic_ai",
                "ours.total",
                "least.total",
                note="raw column: start -> pydantic-ai imported, + the first-call floor above",
            ),
            compared(
                medians,
                "new-answer-floor-raw",
                "new process: start -> first answer, the floor vs raw SDK",
                "least.total",
                "raw.total",
                note="ours column: the raw column of new-answer-floor (the same work without this library)",
            ),
            compared(
                medians,
                "new-answer-eager",
                "new process: start -> first answer vs the same with claude_agent_sdk imported before the call",
                "ours.total",
                "eager.total",
                note="raw column: what importing the SDK before the first call (in the constructor) would give",
            ),
            compared(
                medians,
                "new-ready",
                "new process: start -> ready for the first call (imports) vs raw SDK",
                "ours.ready",
                "raw.ready",
            ),
            compared(
                medians,
                "new-ready-framework",
                "new process: start -> ready vs `from pydantic_ai import Agent` alone",
                "ours.ready",
                "floor.ready",
                note="what `from claudecode_model import ClaudeCodeModel` adds to the framework's import",
            ),
            compared(
                medians,
                "new-cpu",
                "new process: CPU until the first answer (the process, not the CLI) vs raw SDK",
                "ours.cpu",
                "raw.cpu",
                note="time.process_time() at the answer: the interpreter, every import, the call; steady under load",
            ),
            compared(
                medians,
                "new-cpu-floor",
                "new process: CPU until the first answer vs the floor (no library: same imports and runs)",
                "ours.cpu",
                "least.cpu",
                note="raw column: floor.py's CPU (pydantic-ai, its FunctionModel run, the SDK) + the raw call's",
            ),
        ]
        if self._with_peer:
            rows += [
                compared(
                    medians,
                    "new-first-call-peer",
                    f"new process: first call vs {PEER}'s first generateText (Node)",
                    "ours.call",
                    "peer.call",
                    Target(f"<= 1.0 x {PEER}", 1.0),
                    note=f"{PEER} with createAiSdkMcpServer; the raw column is the peer's",
                ),
                compared(
                    medians,
                    "new-first-call-floor-peer",
                    f"new process: the first call's floor vs {PEER}'s first generateText (Node)",
                    "least.call",
                    "peer.call",
                    note="ours column: the raw column of new-first-call-floor; the raw column is the peer's",
                ),
                compared(
                    medians,
                    "new-answer-peer",
                    f"new process: start -> first answer vs {PEER} (Node)",
                    "ours.total",
                    "peer.total",
                    Target(f"<= 1.2 x {PEER}", 1.2),
                ),
                compared(
                    medians,
                    "new-answer-floor-peer",
                    f"new process: start -> first answer, the floor vs {PEER} (Node)",
                    "least.total",
                    "peer.total",
                    note="ours column: the raw column of new-answer-floor; the raw column is the peer's",
                ),
                compared(
                    medians,
                    "new-cpu-peer",
                    f"new process: CPU until the first answer vs {PEER} (Node)",
                    "ours.cpu",
                    "peer.cpu",
                ),
                compared(
                    medians,
                    "new-ready-peer",
                    f"new process: start -> ready for the first call vs {PEER} (Node)",
                    "ours.ready",
                    "peer.ready",
                ),
            ]
        return rows
