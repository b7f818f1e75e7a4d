"""The parts of a ``ClaudeCodeModel`` created at first use: its CLI session pool, tool setup and parking lot.

Creating them lazily keeps claude-agent-sdk and mcp out of the model's import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claudecode_model._execution import ToolExecution

if TYPE_CHECKING:
    from claudecode_model._parked import ParkingLot
    from claudecode_model._request_tools import ToolSetup
    from claudecode_model._session import CLISession, SessionPool
    from claudecode_model._turn import CLITurn
    from claudecode_model.ipc._types import TransportType

__all__ = ["ModelResources"]


class ModelResources:
    """A model's idle CLI sessions, tool setup and parked turns, each created on first use."""

    def __init__(
        self, *, keep_sessions: int, idle_timeout: float, transport: TransportType, execution: ToolExecution
    ) -> None:
        self._keep_sessions = keep_sessions
        self._idle_timeout = idle_timeout
        self._transport: TransportType = transport
        self._execution: ToolExecution = execution
        self._pool: SessionPool[CLISession] | None = None
        self._tools: ToolSetup | None = None
        self.parked_if_created: ParkingLot[CLITurn] | None = None

    @property
    def pool(self) -> SessionPool[CLISession]:
        """The idle CLI sessions kept for follow-up turns."""
        if self._pool is None:
            from claudecode_model._session import SessionPool

            self._pool = SessionPool(max_idle=self._keep_sessions, idle_timeout=self._idle_timeout)
        return self._pool

    @property
    def tools(self) -> ToolSetup:
        """How the model serves tools."""
        if self._tools is None:
            from claudecode_model._request_tools import ToolSetup

            self._tools = ToolSetup(transport=self._transport, execution=self._execution)
        return self._tools

    @property
    def parked(self) -> ParkingLot[CLITurn]:
        """The CLI turns waiting for tool results pydantic-ai runs."""
        if self.parked_if_created is None:
            from claudecode_model._parked import ParkingLot
            from claudecode_model._turn import CLITurn

            self.parked_if_created = ParkingLot(close=CLITurn.close_parked, kill=CLITurn.kill)
        return self.parked_if_created

    async def aclose(self) -> None:
        """Stop the parked turns, then the idle CLI sessions (only what was created)."""
        if self.parked_if_created is not None:
            await self.parked_if_created.close_all()
        if self._pool is not None:
            await self._pool.close_all()
