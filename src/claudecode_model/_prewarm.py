"""``ClaudeCodeModel.prewarm``: an agent run whose model request starts a spare CLI process instead of a turn.

The agent's own run machinery prepares the request (instructions, system prompts, tools, output type, settings), so
the spare is started with what a real run of that agent would start a CLI with; nothing reaches Claude.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

if TYPE_CHECKING:
    from pydantic_ai.agent import AbstractAgent

    from claudecode_model._turns.runner import TurnRunner

__all__ = ["Prewarmed", "prewarm", "prewarm_requested", "start_spare_instead"]

_PREWARMING: ContextVar[list[bool] | None] = ContextVar("claudecode_model_prewarming", default=None)
"""Set by :func:`prewarm` while it runs the agent: the request starts a spare instead of a turn."""


class Prewarmed(Exception):
    """Ends the agent run :func:`prewarm` started, once the spare is ready."""


def prewarm_requested() -> bool:
    """Whether the current request is the one :func:`prewarm` runs (it then starts a spare, not a turn)."""
    return _PREWARMING.get() is not None


async def start_spare_instead(
    runner: TurnRunner,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> NoReturn:
    """Start the spare a request like this one would use, record whether it is ready, and end the agent's run."""
    from claudecode_model._turns.start import prewarm_turn

    prewarming = _PREWARMING.get()
    assert prewarming is not None, "start_spare_instead() outside prewarm()"
    prewarming.append(await prewarm_turn(runner, messages, settings, params))
    raise Prewarmed


async def prewarm(
    model: Model,
    agent: AbstractAgent[Any, Any] | None,
    *,
    deps: Any,
    model_settings: ModelSettings | None,
) -> bool:
    """Run ``agent`` (or a plain request without one) on ``model`` so that its request starts a spare; whether the
    spare is ready."""
    prewarmed: list[bool] = []
    token = _PREWARMING.set(prewarmed)
    try:
        if agent is None:
            messages: list[ModelMessage] = [ModelRequest.user_text_prompt("")]
            await model.request(messages, model_settings, ModelRequestParameters())
        else:
            await agent.run("", model=model, deps=deps, model_settings=model_settings)
    except Prewarmed:
        pass
    except BaseExceptionGroup as group:
        _, rest = group.split(Prewarmed)
        if rest is not None:
            raise rest from None
    finally:
        _PREWARMING.reset(token)
    if not prewarmed:
        raise RuntimeError("prewarm(): the agent's run did not request this model")
    return prewarmed[0]
