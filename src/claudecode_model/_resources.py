"""What a ``ClaudeCodeModel`` runs its requests with: its CLI, session pool, process slots, tool setup and parking
lot (each created at first use), and the start and end of a request's CLI turn.

Creating them lazily keeps claude-agent-sdk and mcp out of the model's import.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RequestUsage

from claudecode_model._history.repair import repair_history
from claudecode_model._process.exit import Closable, close_on, track
from claudecode_model._sessions.limits import ProcessLimits
from claudecode_model._settings_check import check_request_settings
from claudecode_model._tools.execution import ToolExecution
from claudecode_model._turns.parked import continue_parked, settle
from claudecode_model.exceptions import ClaudeCodeError
from claudecode_model.stores._check import DEFAULT_STORE_TIMEOUT

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStore

    from claudecode_model._process.slots import ProcessSlots
    from claudecode_model._sessions.pool import SessionPool
    from claudecode_model._sessions.session import CLISession
    from claudecode_model._sessions.transport import CLITransports
    from claudecode_model._tools.execution import TransportType
    from claudecode_model._tools.request import ToolSetup
    from claudecode_model._turns.parking_lot import ParkingLot
    from claudecode_model._turns.runner import TurnRunner
    from claudecode_model._turns.turn import CLITurn

__all__ = ["SPARES_PER_SIGNATURE_TOTAL", "ModelResources"]

SPARES_PER_SIGNATURE_TOTAL = 4
"""The total cap on spares is this many times ``spare_sessions``."""


@dataclass(eq=False)
class ModelResources:
    """A model's CLI, idle CLI sessions and spares, process slots, tool setup and parked turns, each created on
    first use."""

    model_name: str | None
    cli_path_option: str | os.PathLike[str] | None
    env: dict[str, str]
    limits: ProcessLimits
    transport: TransportType
    execution: ToolExecution
    session_store: SessionStore | None
    session_store_timeout: float = DEFAULT_STORE_TIMEOUT
    cli_transports: CLITransports | None = None
    """How the model's sessions reach their CLI (``None``: a child process each)."""
    _cli_path: Path | None = field(default=None, init=False)
    _pool: SessionPool[CLISession] | None = field(default=None, init=False)
    _slots: ProcessSlots | None = field(default=None, init=False)
    _tools: ToolSetup | None = field(default=None, init=False)
    parked_if_created: ParkingLot[CLITurn] | None = field(default=None, init=False)
    _runner_if_created: TurnRunner | None = field(default=None, init=False)

    @property
    def cli_path(self) -> Path:
        """The CLI binary the model runs."""
        if self._cli_path is None:
            from claudecode_model._process.binary import find_cli, log_support

            self._cli_path = find_cli(self.cli_path_option)
            log_support(self._cli_path)
        return self._cli_path

    @property
    def pool(self) -> SessionPool[CLISession]:
        """The idle CLI sessions kept for follow-up turns, and the spares.

        With the default ``keep_sessions`` they count against the program's idle budget, shared with the other
        models; an explicit number is the model's own budget.
        """
        if self._pool is None:
            from claudecode_model._sessions.idle_budget import PROGRAM_IDLE_BUDGET, IdleBudget
            from claudecode_model._sessions.pool import SessionPool

            keep, spares = self.limits.keep_sessions, self.limits.spare_sessions
            self._pool = SessionPool(
                budget=PROGRAM_IDLE_BUDGET if keep is None else IdleBudget(keep),
                idle_timeout=self.limits.idle_timeout,
                max_spares=spares,
                max_spares_total=SPARES_PER_SIGNATURE_TOTAL * spares,
            )
        return self._pool

    @property
    def slots(self) -> ProcessSlots:
        """The cap on the model's live CLI processes."""
        if self._slots is None:
            from claudecode_model._process.slots import ProcessSlots, default_max_processes

            cap = self.limits.max_processes
            limit = cap if cap is not None else default_max_processes()
            self._slots = ProcessSlots(limit)
        return self._slots

    @property
    def tools(self) -> ToolSetup:
        """How the model serves tools."""
        if self._tools is None:
            from claudecode_model._tools.request import ToolSetup

            self._tools = ToolSetup(transport=self.transport, execution=self.execution)
        return self._tools

    @property
    def tools_registered(self) -> bool:
        """Whether toolsets were registered with ``set_agent_toolsets`` (known without loading the tool modules)."""
        return self._tools is not None and self._tools.registered_toolsets is not None

    @property
    def parked(self) -> ParkingLot[CLITurn]:
        """The CLI turns waiting for tool results pydantic-ai runs."""
        if self.parked_if_created is None:
            from claudecode_model._turns.parking_lot import ParkingLot
            from claudecode_model._turns.turn import CLITurn

            self.parked_if_created = ParkingLot(
                close=CLITurn.close_parked, kill=CLITurn.kill, stop_now=CLITurn.stop_now
            )
        return self.parked_if_created

    @asynccontextmanager
    async def turn(
        self,
        model: Closable,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
        *,
        content_events: bool = True,
    ) -> AsyncIterator[CLITurn]:
        """The CLI turn of one request of ``model``; at the end it is parked if it waits for tool results, else
        finished. ``content_events=False``: the request does not stream (its content comes in whole messages)."""
        turn = await self._start_turn(model, messages, settings, params, run_context)
        turn.set_streaming(content_events)
        try:
            yield turn
        finally:
            # Shielded: a request cancelled by an anyio deadline (pydantic-ai's request_timeout and
            # first_event_timeout) is cancelled again at every await inside the scope, and the CLI must still stop.
            with anyio.CancelScope(shield=True):
                await settle(turn, self.parked, self.pool.idle_timeout)

    async def _start_turn(
        self,
        model: Closable,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
        run_context: RunContext[Any] | None,
    ) -> CLITurn:
        """Continue the parked turn waiting for this request's tool results, else check the settings (before
        anything starts), then plan and start a new turn (inside ``prewarm()``, a spare instead)."""
        requested_at = asyncio.get_running_loop().time()
        from claudecode_model._prewarm import prewarm_requested, start_spare_instead
        from claudecode_model._sessions.early_cli import start_early_cli
        from claudecode_model._turns.run_scope import current_run_scope

        scope = current_run_scope()
        run_started = scope.first_request_start() if scope is not None else None
        if run_started is not None:  # the timeout counts what the model did for the run before its first request
            requested_at -= time.monotonic() - run_started

        prewarming = prewarm_requested()
        if not prewarming:
            parked = await continue_parked(self.parked_if_created, messages, settings, params)
            if parked is not None:
                return parked
        check_request_settings(settings)
        # A new process's first request starts its CLI now and imports claude-agent-sdk while it boots.
        early = (
            None
            if prewarming or self.cli_transports is not None
            else await start_early_cli(self, messages, settings, params)
        )
        try:
            from claudecode_model._turns.start import start_turn

            track(model, self.pool.kill_all)  # closed at interpreter exit if still alive
            runner = self._runner()
            # Orphaned or repeated tool results are repaired, with a WARNING saying what changed.
            if prewarming:
                await start_spare_instead(runner, repair_history(messages), settings, params)
            return await start_turn(
                runner, repair_history(messages), settings, params, run_context, requested_at=requested_at
            )
        except ClaudeCodeError as error:
            from claudecode_model._turns.spent import note_nothing_spent

            note_nothing_spent(error)  # no turn ran: nothing reached the API
            raise
        finally:
            if early is not None:
                await early.settle()

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> RequestUsage:
        """A request's input tokens, estimated without an API request (see :mod:`claudecode_model._turns.count`)."""
        check_request_settings(settings)
        from claudecode_model._turns.count import count_request_tokens

        return count_request_tokens(repair_history(messages), settings, params)

    def _runner(self) -> TurnRunner:
        if self._runner_if_created is not None:
            return self._runner_if_created
        from claudecode_model._history.store import GuardedStore
        from claudecode_model._turns.runner import TurnRunner

        store = self.session_store
        self._runner_if_created = TurnRunner(
            self.model_name,
            self.model_name or "default",
            self.cli_path,
            self.env,
            self.tools,
            self.pool,
            session_store=GuardedStore(store, timeout=self.session_store_timeout) if store is not None else None,
            slots=self.slots,
            parked=self.parked,
            cli_transports=self.cli_transports,
        )
        return self._runner_if_created

    async def aclose(self) -> None:
        """Stop the parked turns, then the idle CLI sessions and spares, each on the event loop it belongs to (the
        running one, and those of earlier ``run_sync`` calls or other threads), then a session store call that timed
        out (only what was created)."""
        here = asyncio.get_running_loop()
        loops: set[asyncio.AbstractEventLoop] = set()
        if self.parked_if_created is not None:
            loops |= self.parked_if_created.loops()
        if self._pool is not None:
            loops |= self._pool.loops()
        for loop in loops - {here}:
            await close_on(loop, self._close_here)
        await self._close_here()
        runner = self._runner_if_created
        if runner is not None and runner.session_store is not None:
            await runner.session_store.aclose()

    async def _close_here(self) -> None:
        if self.parked_if_created is not None:
            await self.parked_if_created.close_all()
        if self._pool is not None:
            await self._pool.close_all()

    def stop_now(self) -> None:
        """Stop every CLI process of the idle sessions and spares at once (from synchronous code in a running loop;
        the owner tasks are tidied up by :meth:`aclose` on their loops)."""
        if self._pool is not None:
            self._pool.terminate_all()
