"""Sessions on another worker: resuming from a shared session store vs replaying the history, and the store's cost.

Runs a real PostgreSQL server (the distribution's binaries, as the tests do) for the store.
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
from tests._support.postgres import PostgresServer

from bench._brain import expected_answer, prompt
from bench._core import BenchContext, Metrics, Row, Suite, Target, Variant, check
from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, PostgresSessionStore

HISTORY_TURNS = 20
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


def _session_id(result: Any) -> str:
    return str((result.all_messages()[-1].provider_details or {}).get("session_id"))


class StoreSuite(Suite):
    """A 20-turn conversation is held once; each repetition continues it on a new worker, both ways."""

    name = "store"
    description = (
        f"a {HISTORY_TURNS}-turn conversation continued on a new worker (new model, new CLAUDE_CONFIG_DIR): "
        "resumed from a PostgreSQL session store vs replayed from the message history"
    )
    row_names = ("store-resume", "store-append")
    default_repeat = 5
    settle_between = False  # the PostgreSQL server is a child process for the whole suite; models are closed

    @asynccontextmanager
    async def variants(self, bench: BenchContext) -> AsyncIterator[dict[str, Variant]]:
        root = Path(tempfile.mkdtemp(prefix="bench-store-"))
        with PostgresServer() as server:
            dsn = server.dsn(server.create_database())
            async with PostgresSessionStore(dsn) as store:
                history = await self._conversation(bench, store, root)

                def worker_env() -> dict[str, str]:
                    config_dir = Path(tempfile.mkdtemp(dir=root))
                    return {**bench.env, "CLAUDE_CONFIG_DIR": str(config_dir)}

                async def continue_turn(*, resume: bool) -> Metrics:
                    model = ClaudeCodeModel(env=worker_env(), session_store=store if resume else None)
                    settings: ClaudeCodeModelSettings = {} if resume else {"claude_code_session": "new"}
                    started = time.perf_counter()
                    try:
                        result = await Agent(model).run(
                            prompt(run_id="next"), message_history=history, model_settings=settings
                        )
                    finally:
                        await model.aclose()
                    elapsed = time.perf_counter() - started
                    check(result.output == expected_answer(calls=0, run_id="next"), f"answered {result.output!r}")
                    resumed = _session_id(result) == _session_id_of(history)
                    outcome = "stayed" if resumed else "changed"
                    check(resumed == resume, f"resume={resume}, but the session id {outcome}")
                    return {"turn": elapsed}

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

    async def _conversation(self, bench: BenchContext, store: PostgresSessionStore, root: Path) -> list[Any]:
        """The history: ``HISTORY_TURNS`` turns on one live CLI session mirrored to the store."""
        config_dir = Path(tempfile.mkdtemp(dir=root))
        model = ClaudeCodeModel(env={**bench.env, "CLAUDE_CONFIG_DIR": str(config_dir)}, session_store=store)
        agent = Agent(model)
        messages: list[Any] | None = None
        try:
            for turn in range(HISTORY_TURNS):
                result = await agent.run(prompt(run_id=f"t{turn}"), message_history=messages)
                check(result.output == expected_answer(calls=0, run_id=f"t{turn}"), f"turn {turn}: {result.output!r}")
                messages = result.all_messages()
        finally:
            await model.aclose()
        assert messages is not None
        return messages

    def rows(self, medians: dict[str, float]) -> list[Row]:
        ratio = medians["resume.turn"] / medians["replay.turn"]
        append = medians["appends.append"]
        return [
            Row(
                key="store-resume",
                name=f"next turn of a {HISTORY_TURNS}-turn conversation on another worker: store resume vs replay",
                ours=medians["resume.turn"],
                raw=medians["replay.turn"],
                pair=("resume.turn", "replay.turn"),
                target=Target("<= 0.5 x replaying", 0.5),
                figure=ratio,
                figure_text=f"{ratio:.2f} x replay",
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


def _session_id_of(messages: list[Any]) -> str:
    return str((messages[-1].provider_details or {}).get("session_id"))
