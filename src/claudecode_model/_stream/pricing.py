"""The list price of one API call, for the responses of a turn that end before the CLI reports the turn's cost.

The CLI reports a cost only with a turn's result. A turn in which pydantic-ai runs tool calls is several model
responses; each one before the last is priced from its own token usage here (with genai-prices, as pydantic-ai's
``ModelResponse.cost()`` does), and the last one carries the rest of the cost the CLI reports, so they add up to it.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from pydantic_ai.usage import RequestUsage

__all__ = ["list_price"]

logger = logging.getLogger(__name__)


def list_price(usage: RequestUsage, model_name: str) -> Decimal | None:
    """What ``usage`` costs on Anthropic's API at list price for ``model_name``; ``None`` if the price is unknown."""
    from genai_prices import calc_price

    try:
        price = calc_price(usage, model_ref=model_name, provider_id="anthropic")
    except (LookupError, ValueError) as error:
        logger.debug("no list price for %s (%s): the turn's last response carries its cost", model_name, error)
        return None
    return Decimal(str(round(price.total_price, 10)))
