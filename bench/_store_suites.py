"""Sessions on another worker: resuming from a shared session store vs replaying the history, and the store's cost.

Runs a real PostgreSQL server (the distribution's binaries, as the tests do) for the store, and an offline backend of
its own that emulates the API's prompt caching (``OfflineBackend(prompt_cache=...)``): what the next turn costs
depends on how much of its request the API finds cached, which is where resuming and replaying differ.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import SessionKey, SessionStoreEntry
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models.function import FunctionModel
from tests._support.postgres import PostgresServer

from bench._agents import last_details, probe_agent, session_id
from bench._brain import bench_brain, expected_answer, prompt
from bench._core import BenchContext, Metrics, Row, Suite, Target, Variant, check, measured
from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, PostgresSessionStore
from claudecode_model.testing import OfflineBackend, PromptCache

HISTORY_TURNS = 20
TOOL_CALL_TURNS = frozenset({3, 11})
"""The turns of the history that call the tool once (the others answer at once)."""
APPENDS_MEASURED = 5


class _TimedStore(PostgresSessionStore):
    """A PostgreSQL store that records how long each ``append`` took (the SDK awaits it before a turn's result)."""

    def __init__(self, conninfo: str) -> None:
        super().__init__(conninfo)
        self.append_seconds: list[float] = []

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        started = time.perf_counter()
        await super().append(key, entries)
        self.append_seconds.append(time.perf_counter() - started)


def _turn_metrics(result: Any, elapsed: float) -> Metrics:
    """The turn's wall time, its cost as the CLI computed it, and how its input tokens split."""
    response = result.all_messages()[-1]
    check(isinstance(response, ModelResponse), "the turn ended without a response")
    usage = response.usage
    check(usage.cost is not None, "the CLI reported no cost")
    return {
        "turn": elapsed,
        "cost": float(usage.cost),
        "read": float(usage.cache_read_tokens),
        "written": float(usage.cache_write_tokens),
        "uncached": float(usage.input_tokens),
    }


class StoreSuite(Suite):
    """Each repetition holds two 20-turn conversations on worker A and continues each on a new worker, one way each."""

    name = "store"
    description = (
        f"a {HISTORY_TURNS}-turn conversation continued on a new worker (new model, new CLAUDE_CONFIG_DIR): "
        "resumed from a PostgreSQL session store vs replayed from the message history, against a backend that "
        "emulates the API's prompt caching"
    )
    row_names = ("store-resume", "store-resume-time", "store-append")
    default_repeat = 5
    settle_between = False  # the PostgreSQL server is a child process for the whole suite; models are closed

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        root = Path(tempfile.mkdtemp(prefix="bench-store-"))
        # A cache of its own, with the API's rules (5-minute lifetime, 1024-token minimum): the suite's numbers do
        # not depend on what other suites of the run left in the process-wide one.
        backend = OfflineBackend(FunctionModel(bench_brain), prompt_cache=PromptCache())
        with backend, PostgresServer() as server:
            dsn = server.dsn(server.create_database())
            async with PostgresSessionStore(dsn) as store:

                def worker_env() -> dict[str, str]:
                    return backend.cli_env(config_dir=tempfile.mkdtemp(dir=root))

                conversations = iter(range(1_000_000))

                async def continue_turn(*, resume: bool) -> Metrics:
                    # Each measurement continues a conversation of its own, held on worker A just before (as a next
                    # turn arriving within the cache's lifetime): a resumed session is then resumed, not forked (an
                    # earlier measurement would have continued it), and no measurement finds another's requests in
                    # the cache, only its own history's.
                    tag = f"c{next(conversations)}"
                    history = await self._conversation(worker_env(), store, tag)
                    run_id = f"{tag}next"
                    model = ClaudeCodeModel(env=worker_env(), session_store=store if resume else None)
                    settings: ClaudeCodeModelSettings = {} if resume else {"claude_code_session": "new"}
                    started = time.perf_counter()
                    try:
                        result = await probe_agent(model).run(
                            prompt(run_id=run_id), message_history=history, model_settings=settings
                        )
                    finally:
                        await model.aclose()
                    elapsed = time.perf_counter() - started
                    check(result.output == expected_answer(calls=0, run_id=run_id), f"answered {result.output!r}")
                    resumed = session_id(result.all_messages()) == session_id(history)
                    outcome = "stayed" if resumed else "changed"
                    check(resumed == resume, f"resume={resume}, but the session id {outcome}")
                    source = last_details(result.all_messages()).get("session_source")
                    check(source == ("resume" if resume else "replay"), f"resume={resume}, but the source is {source}")
                    check(not backend.errors, f"the offline backend's brain failed: {backend.errors[-1:]}")
                    return _turn_metrics(result, elapsed)

                async def resume() -> Metrics:
                    return await continue_turn(resume=True)

                async def replay() -> Metrics:
                    return await continue_turn(resume=False)

                async def appends() -> Metrics:
                    timed = _TimedStore(dsn)
                    model = ClaudeCodeModel(env=worker_env(), session_store=timed)
                    agent = Agent(model)
                    try:
                        result = await agent.run(prompt(run_id="a0"))
                        for index in range(1, APPENDS_MEASURED + 1):
                            result = await agent.run(prompt(run_id=f"a{index}"), message_history=result.all_messages())
                    finally:
                        await model.aclose()
                        await timed.aclose()
                    check(len(timed.append_seconds) >= APPENDS_MEASURED, f"{len(timed.append_seconds)} appends")
                    # The first turn also creates the session row; the later ones are the steady state.
                    return {"append": statistics.median(timed.append_seconds[1:])}

                try:
                    yield {"resume": resume, "replay": replay, "appends": appends}
                finally:
                    shutil.rmtree(root, ignore_errors=True)

    async def _conversation(self, env: dict[str, str], store: PostgresSessionStore, tag: str) -> list[Any]:
        """A history: ``HISTORY_TURNS`` turns (two with a tool call) on one live CLI session mirrored to the store.

        ``tag`` makes its prompts its own. The answers are long enough for the history to pass the API's minimum
        cacheable length.
        """
        model = ClaudeCodeModel(env=env, session_store=store)
        agent = probe_agent(model)
        messages: list[Any] | None = None
        try:
            for turn in range(HISTORY_TURNS):
                calls = 1 if turn in TOOL_CALL_TURNS else 0
                run_id = f"{tag}t{turn}"
                result = await agent.run(prompt(calls=calls, run_id=run_id, long=True), message_history=messages)
                expected = expected_answer(calls=calls, run_id=run_id, long=True)
                check(result.output == expected, f"turn {turn}: {result.output!r}")
                messages = result.all_messages()
        finally:
            await model.aclose()
        assert messages is not None
        return messages

    def rows(self, medians: dict[str, float]) -> list[Row]:
        cost_ratio = medians["resume.cost"] / medians["replay.cost"]
        time_ratio = medians["resume.turn"] / medians["replay.turn"]
        append = medians["appends.append"]

        def split(way: str) -> str:
            read, written, uncached = (round(medians[f"{way}.{kind}"]) for kind in ("read", "written", "uncached"))
            return f"{way}: {read} read from the cache, {written} written to it, {uncached} uncached"

        return [
            Row(
                key="store-resume",
                name=f"cost of the next turn of a {HISTORY_TURNS}-turn conversation on another worker: "
                "store resume vs replay (CLI's total_cost_usd, prompt caching emulated)",
                **measured(medians, "resume.cost", "replay.cost"),
                target=Target("<= 0.5 x replaying", 0.5),
                figure=cost_ratio,
                figure_text=f"{cost_ratio:.2f} x replay",
                unit="USD",
                note=f"raw column = replay; input tokens (medians) {split('resume')}; {split('replay')}",
            ),
            Row(
                key="store-resume-time",
                name="wall time of that turn: store resume vs replay",
                **measured(medians, "resume.turn", "replay.turn"),
                target=Target("reported"),
                figure=time_ratio,
                figure_text=f"{time_ratio:.2f} x replay",
                note="both start a new CLI process that sends the whole history; raw column = replay",
            ),
            Row(
                key="store-append",
                name="session store overhead per turn (PostgreSQL append, awaited before the result)",
                ours=append,
                raw=None,
                target=Target("<= 10 ms", 0.010),
                figure=append,
                figure_text=f"{append * 1000:.1f} ms",
                note="loopback PostgreSQL over its Unix socket",
            ),
        ]
