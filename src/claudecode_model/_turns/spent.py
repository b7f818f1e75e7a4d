"""What a failed turn had spent, on the error it raises (:func:`note_spent`, :func:`note_nothing_spent`)."""

from __future__ import annotations

from decimal import Decimal

from pydantic_ai.usage import RequestUsage

from claudecode_model._stream.pricing import list_price
from claudecode_model._stream.translator import TurnTranslator
from claudecode_model.exceptions import ClaudeCodeError, ClaudeCodeInactivityError

__all__ = ["note_nothing_spent", "note_spent"]


def note_spent(error: ClaudeCodeError, translator: TurnTranslator, previous_cost_usd: float, model_name: str) -> None:
    """Set ``usage``, ``cost_usd``, ``api_requests`` and ``reached_model`` of ``error`` from what the turn's CLI
    reported so far: the result's totals and cost where it sent one, else the streamed usage at list price."""
    outcome = translator.outcome
    usage = translator.usage(previous_cost_usd, lambda response_usage: list_price(response_usage, model_name))
    cost = usage.cost
    if cost is None and usage.has_values():
        cost = list_price(usage, model_name)
    error.usage = usage
    error.cost_usd = float(cost) if cost is not None else (0.0 if not usage.has_values() else None)
    # A turn stopped for silence outside a reply was waiting for an API request that never answered.
    waiting = isinstance(error, ClaudeCodeInactivityError) and not translator.in_stream
    error.api_requests = outcome.api_requests + int(waiting)
    error.reached_model = bool(outcome.answered) or usage.has_values() or bool(cost and cost > Decimal(0))


def note_nothing_spent(error: ClaudeCodeError) -> None:
    """Mark ``error``, raised before the turn sent anything to the API, as having spent nothing (unless a turn
    already said what it spent)."""
    if error.reached_model is not None:
        return
    error.usage = RequestUsage()
    error.cost_usd = 0.0
    error.api_requests = 0
    error.reached_model = False
