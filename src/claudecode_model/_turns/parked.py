"""Parking and continuing the CLI turns that wait for tool results pydantic-ai runs (see
:mod:`claudecode_model._tools.agent_executed`).

Importing this module imports neither claude-agent-sdk nor mcp: they are imported at the first request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import anyio
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from claudecode_model._history.details import PROVIDER_NAME

if TYPE_CHECKING:
    from claudecode_model._turns.parking_lot import ParkingLot
    from claudecode_model._turns.turn import CLITurn
    from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = ["continue_parked", "settle"]

logger = logging.getLogger(__name__)


async def continue_parked(
    lot: ParkingLot[CLITurn] | None,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> CLITurn | None:
    """The parked turn waiting for the answers this request carries, with the answers delivered (and a new user
    prompt sent along with them, which Claude gets with the answers).

    A turn whose CLI was started with another system prompt than this request's (instructions that changed during
    the run) cannot go on: it is closed, and the request takes up its calls from the history in a new session.
    """
    if lot is None:
        return None
    from claudecode_model._compat import new_parts_manager, request_instructions
    from claudecode_model._history.plan import system_prompt_of
    from claudecode_model._sessions.options import effective_system_prompt
    from claudecode_model._tools.agent_executed import deliver_answers, pending_calls
    from claudecode_model._turns.run_scope import current_run_scope

    lot.prune_dead_loops()
    pending = pending_calls(messages, PROVIDER_NAME)
    if pending is None:
        return None
    scope = current_run_scope()
    this_runs = lot.owned_by(scope) if scope is not None else []
    turn = lot.claim(pending.ids)
    if turn is None:
        return None
    claude_settings = cast("ClaudeCodeModelSettings", settings or {})
    system_prompt = effective_system_prompt(
        claude_settings, system_prompt_of(messages, request_instructions(messages, params))
    )
    if turn.session.closed:
        # Its CLI ended while the calls ran (unnoticed so far): the caller replays the history with the results.
        await turn.close_parked()
        return None
    if system_prompt != turn.system_prompt:
        logger.debug("the system prompt changed while a turn waited for tool results: its calls go on in a new session")
        await turn.close_parked()
        return None
    if _offered(params) != _offered(turn.params):
        # tool_choice (or the tools) changed between the steps of a run: the CLI offers the tools it started with.
        logger.debug("the offered tools changed while a turn waited for tool results: its calls go on in a new session")
        await turn.close_parked()
        return None
    try:
        if pending.prompts:
            await turn.say(pending.prompts)
    except BaseException:
        with anyio.CancelScope(shield=True):  # a request deadline's cancellation must not cut the close short
            await turn.close_parked()
        raise
    # The answers Claude Code gets cut (earlier ones were kept as they were delivered): their handlers offer the reader.
    await turn.router.reader.keep_parts(pending.new_parts)
    deliver_answers(turn.router.results, pending)
    turn.continue_with(messages, new_parts_manager(params), another_run=turn not in this_runs)
    return turn


async def settle(turn: CLITurn, lot: ParkingLot[CLITurn], idle_timeout: float | None) -> None:
    """After a request: park a turn that waits for tool results, else finish it.

    Outside an agent run's scope the parked turn is closed after ``idle_timeout``; inside, the scope decides.
    """
    waiting = turn.waiting_calls
    if not waiting:
        await turn.finish()
        return
    from claudecode_model._turns.run_scope import current_run_scope

    scope = current_run_scope()

    def cli_died(error: BaseException) -> None:
        if not lot.close_soon(turn):
            return
        from claudecode_model._stream.errors import exit_description

        logger.warning(
            "The Claude Code CLI of a turn waiting for %d tool result(s) ended (%s); the results will be given to "
            "Claude in a new session that replays the conversation",
            len(waiting),
            exit_description(getattr(error, "exit_code", None)),
        )

    turn.park(on_cli_death=cli_died)
    lot.park(turn, waiting, timeout=None if scope is not None else idle_timeout, owner=scope)


def _offered(params: ModelRequestParameters) -> set[str]:
    """The names of the agent's tools a request offers Claude."""
    return {tool.name for tool in (*params.function_tools, *params.output_tools)}
