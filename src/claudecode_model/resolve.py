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
from pydantic_ai.profiles import ModelProfileSpec
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from claudecode_model._tools.execution import TransportType
from claudecode_model.exceptions import InvalidModelIdError
from claudecode_model.model import ClaudeCodeModel
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.stores._check import DEFAULT_STORE_TIMEOUT

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStore

    from claudecode_model._sessions.transport import CLITransports
    from claudecode_model._tools.execution import ToolExecution

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

    The fields are the model options every resolved model gets: every argument of
    :class:`~claudecode_model.ClaudeCodeModel` but the model name, with the same defaults. Each id resolves to one
    model per capability, so runs that name the same id share its CLI processes kept for follow-up turns. Other ids
    are left to the next resolver and finally to pydantic-ai's own ``infer_model``.

    The resolved models' CLI processes are stopped by :meth:`aclose` / :meth:`close`, and by leaving
    ``async with agent:`` of an agent that has this capability.

    In an agent spec (``Agent.from_file(path, custom_capability_types=[ClaudeCodeModels])``):

    ```yaml
    model: claude-code:sonnet
    capabilities:
      - ClaudeCodeModels
    ```
    """

    cli_path: str | os.PathLike[str] | None = None
    """Path to the ``claude`` binary; by default the CLI bundled in claude-agent-sdk, then ``PATH``."""
    settings: ClaudeCodeModelSettings | None = None
    """Default settings of every resolved model (see :class:`~claudecode_model.ClaudeCodeModelSettings`)."""
    profile: ModelProfileSpec | None = None
    """A model profile; by default pydantic-ai's Anthropic profile with native structured output."""
    env: dict[str, str] | None = None
    """Extra environment variables for every CLI process."""
    keep_sessions: int | None = None
    """The most idle CLI processes each model holds (kept for follow-up turns, and spares; 0: none); by default the
    models share the program's budget of 2."""
    session_idle_timeout: float = 300.0
    """Seconds after which an idle CLI process is stopped."""
    tool_transport: TransportType = "auto"
    """How the agent's tools reach the CLI: ``"sdk"``, ``"stdio"`` or ``"auto"``."""
    spare_sessions: int = 1
    """CLI processes each model starts ahead, per session signature, for the next new conversation (0 disables)."""
    max_processes: int | None = None
    """The most CLI processes each model runs at once; by default from the machine's memory and CPUs."""
    tool_execution: ToolExecution = "agent"
    """Who runs the agent's own tools: ``"agent"`` (pydantic-ai) or ``"cli"`` (Claude Code's loop)."""
    session_store: SessionStore | None = None
    """Where every resolved model mirrors its CLI session transcripts (see ``session_store`` of
    :class:`~claudecode_model.ClaudeCodeModel`): a turn on another worker resumes the session from it."""
    session_store_timeout: float = DEFAULT_STORE_TIMEOUT
    """Seconds any one call of ``session_store`` may take (see :class:`~claudecode_model.ClaudeCodeModel`)."""
    cli_transports: CLITransports | None = None
    """How every resolved model's sessions reach their CLI: by default a child process each (tests may pass
    :class:`~claudecode_model.testing.ScriptedCLI`)."""
    _models: dict[str, ClaudeCodeModel] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lifetime: _AgentLifetime | None = field(default=None, init=False, repr=False, compare=False)

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
                cli_path=self.cli_path,
                settings=self.settings,
                profile=self.profile,
                env=self.env,
                keep_sessions=self.keep_sessions,
                session_idle_timeout=self.session_idle_timeout,
                tool_transport=self.tool_transport,
                spare_sessions=self.spare_sessions,
                max_processes=self.max_processes,
                tool_execution=self.tool_execution,
                session_store=self.session_store,
                session_store_timeout=self.session_store_timeout,
                cli_transports=self.cli_transports,
            )
            self._models[key] = model
        return model

    async def resolve_model_id(self, ctx: ModelResolutionContext[Any], *, model_id: str) -> Model | None:
        """pydantic-ai's model-id hook: a :class:`ClaudeCodeModel` for ``claude-code:`` ids, ``None`` otherwise."""
        if not is_claude_code_model_id(model_id):
            return None
        return self.model(model_id)

    def get_toolset(self) -> AbstractToolset[Any]:
        """A toolset without tools, through which ``async with agent:`` tells the capability when the agent is left."""
        if self._lifetime is None:
            self._lifetime = _AgentLifetime(self)
        return self._lifetime

    async def aclose(self) -> None:
        """Stop the CLI processes every resolved model keeps for follow-up turns."""
        for model in list(self._models.values()):
            await model.aclose()

    def close(self) -> None:
        """Synchronous :meth:`aclose`, for programs that use ``run_sync`` (see
        :meth:`ClaudeCodeModel.close <claudecode_model.ClaudeCodeModel.close>`)."""
        for model in list(self._models.values()):
            model.close()


class _AgentLifetime(AbstractToolset[Any]):
    """Entered with the agent (``async with agent:``) and with each run: leaving the last agent-level entry closes
    the capability's models. Entries of runs (made with a run context) do not count: the kept CLI processes outlive
    a run."""

    def __init__(self, capability: ClaudeCodeModels) -> None:
        self._capability = capability
        self._entered = 0

    @property
    def id(self) -> str:
        return "claude-code-models"

    async def __aenter__(self) -> _AgentLifetime:
        if not _in_run():
            self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if not _in_run():
            self._entered -= 1
            if self._entered == 0:
                await self._capability.aclose()
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        raise KeyError(name)  # it has no tools


def _in_run() -> bool:
    from claudecode_model._compat import current_run_context  # imports claude-agent-sdk: not at import

    return current_run_context() is not None


class _CapabilityModel(ClaudeCodeModel):
    """A model whose CLI processes belong to its :class:`ClaudeCodeModels` (stopped by its ``aclose()``).

    pydantic-ai enters a model it resolved from an id around each durable unit (a Temporal activity, a DBOS step)
    and leaves it afterwards. Leaving keeps the processes here, so that the next unit of the run continues the
    turn parked for tool results, or the live session, instead of starting a new CLI every time.
    """

    async def __aexit__(self, *args: Any) -> bool | None:
        return await super(ClaudeCodeModel, self).__aexit__(*args)
