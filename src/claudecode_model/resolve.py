"""Model strings: ``"claude-code:<model>"`` wherever pydantic-ai takes a model name.

pydantic-ai resolves provider-prefixed names itself and has no registry for third-party providers; what it offers
instead is model-id resolution by a capability. :class:`ClaudeCodeModels` is that capability: add it to an agent
and ``"claude-code:sonnet"`` names a :class:`~claudecode_model.ClaudeCodeModel` as the agent's model, in
``ModelFallback``, ``SelectModel``, a run's ``model=`` and agent specs loaded from files.

Example:
    ```python
    from pydantic_ai import Agent
    from claudecode_model import ClaudeCodeModels

    agent = Agent("claude-code:sonnet", capabilities=[ClaudeCodeModels()])
    ```
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model, ModelResolutionContext

from claudecode_model.exceptions import InvalidModelIdError
from claudecode_model.ipc._types import TransportType
from claudecode_model.model import ClaudeCodeModel
from claudecode_model.settings import ClaudeCodeModelSettings

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStore

__all__ = ["MODEL_ID_PREFIX", "ClaudeCodeModels", "claude_code_model_name", "is_claude_code_model_id"]

MODEL_ID_PREFIX = "claude-code:"
"""The provider prefix of Claude Code model ids (``"claude-code:sonnet"``)."""

_DEFAULT_MODEL = "default"


def is_claude_code_model_id(model_id: str) -> bool:
    """Whether ``model_id`` names a Claude Code model (``"claude-code:<model>"``)."""
    return model_id.startswith(MODEL_ID_PREFIX)


def claude_code_model_name(model_id: str) -> str | None:
    """The Claude model a ``"claude-code:<model>"`` id names, or ``None`` for ``"claude-code:default"``.

    ``<model>`` is what the CLI's ``--model`` takes: an alias (``sonnet``, ``opus``, ``haiku``) or a full model id.

    Raises:
        InvalidModelIdError: ``model_id`` is not a ``claude-code:`` id, or names no model (also a pydantic-ai
            ``UserError``, as pydantic-ai's own error for an unknown model is).
    """
    if not is_claude_code_model_id(model_id):
        raise InvalidModelIdError(
            f"{model_id!r} is not a Claude Code model id: write {MODEL_ID_PREFIX}<model>, e.g. 'claude-code:sonnet'"
        )
    name = model_id[len(MODEL_ID_PREFIX) :]
    if not name or name != name.strip() or any(character.isspace() for character in name):
        raise InvalidModelIdError(
            f"Claude Code model id {model_id!r} names no model: write {MODEL_ID_PREFIX}<model> with an alias "
            "(sonnet, opus, haiku), a full model id, or 'default' for the CLI's default model"
        )
    return None if name == _DEFAULT_MODEL else name


@dataclass
class ClaudeCodeModels(AbstractCapability[Any]):
    """Resolve ``"claude-code:<model>"`` model ids to :class:`~claudecode_model.ClaudeCodeModel` instances.

    The fields are the model options every resolved model gets. Each id resolves to one model per capability, so
    runs that name the same id share its CLI processes kept for follow-up turns. Other ids are left to the next
    resolver and finally to pydantic-ai's own ``infer_model``.

    In an agent spec (``Agent.from_file(path, custom_capability_types=[ClaudeCodeModels])``):

    ```yaml
    model: claude-code:sonnet
    capabilities:
      - ClaudeCodeModels
    ```
    """

    settings: ClaudeCodeModelSettings | None = None
    """Default settings of every resolved model (see :class:`~claudecode_model.ClaudeCodeModelSettings`)."""
    cli_path: str | None = None
    """Path to the ``claude`` binary; by default the CLI bundled in claude-agent-sdk, then ``PATH``."""
    env: dict[str, str] | None = None
    """Extra environment variables for every CLI process."""
    keep_sessions: int = 4
    """How many idle CLI processes each model keeps for fast follow-up turns (0 disables)."""
    session_idle_timeout: float = 300.0
    """Seconds after which an idle CLI process is stopped."""
    tool_transport: TransportType = "auto"
    """How the agent's tools reach the CLI: ``"sdk"``, ``"stdio"`` or ``"auto"``."""
    session_store: SessionStore | None = None
    """Where every resolved model mirrors its CLI session transcripts (see ``session_store`` of
    :class:`~claudecode_model.ClaudeCodeModel`): a turn on another worker resumes the session from it."""
    _models: dict[str, ClaudeCodeModel] = field(default_factory=dict, init=False, repr=False, compare=False)

    def model(self, model_id: str) -> ClaudeCodeModel:
        """The model ``model_id`` (``"claude-code:<model>"``) names, e.g. for ``FallbackModel``, which takes instances.

        Raises:
            InvalidModelIdError: ``model_id`` is not a valid ``claude-code:`` id.
        """
        name = claude_code_model_name(model_id)
        key = name or _DEFAULT_MODEL
        model = self._models.get(key)
        if model is None:
            model = _CapabilityModel(
                name,
                cli_path=os.fspath(self.cli_path) if self.cli_path is not None else None,
                settings=self.settings,
                env=self.env,
                keep_sessions=self.keep_sessions,
                session_idle_timeout=self.session_idle_timeout,
                tool_transport=self.tool_transport,
                session_store=self.session_store,
            )
            self._models[key] = model
        return model

    async def resolve_model_id(self, ctx: ModelResolutionContext[Any], *, model_id: str) -> Model | None:
        """pydantic-ai's model-id hook: a :class:`ClaudeCodeModel` for ``claude-code:`` ids, ``None`` otherwise."""
        if not is_claude_code_model_id(model_id):
            return None
        return self.model(model_id)

    async def aclose(self) -> None:
        """Stop the CLI processes every resolved model keeps for follow-up turns."""
        for model in self._models.values():
            await model.aclose()


class _CapabilityModel(ClaudeCodeModel):
    """A model whose CLI processes belong to its :class:`ClaudeCodeModels` (stopped by its ``aclose()``).

    pydantic-ai enters a model it resolved from an id around each durable unit (a Temporal activity, a DBOS step)
    and leaves it afterwards. Leaving keeps the processes here, so that the next unit of the run continues the
    turn parked for tool results, or the live session, instead of starting a new CLI every time.
    """

    async def __aexit__(self, *args: Any) -> bool | None:
        return await super(ClaudeCodeModel, self).__aexit__(*args)
