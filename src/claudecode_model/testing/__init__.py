"""Offline testing support: a local Anthropic Messages API backend for the real Claude Code CLI.

Point the CLI at :class:`OfflineBackend` (``backend.cli_env()``) and its answers come from a pydantic-ai
model (``TestModel`` behaviour by default, a ``FunctionModel`` function, or a script of turns) with no
account and no network. Every request is recorded (:class:`RecordedRequest`) and failures can be injected
(:class:`Failure`). Tests of a model's sessions that need no real CLI run on :class:`ScriptedCLI` instead
(``ClaudeCodeModel(cli_transports=ScriptedCLI([...]))``): scripted turns, no process.

The names are imported lazily, so that loading the pytest plugin (a submodule) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claudecode_model._lazy import lazy_exports

if TYPE_CHECKING:
    from ._backend import OfflineBackend
    from ._brain import ScriptExhaustedError, ScriptItem
    from ._cache import PromptCache
    from ._cli import CLIStep, Crash, ScriptedCLI, Stall
    from ._env import DUMMY_API_KEY, quiet_cli_env
    from ._request import CLIAddition, RecordedRequest, ToolResult, is_cli_addition, strip_noise
    from ._script import Failure, ScriptedTurn

__all__ = [
    "DUMMY_API_KEY",
    "CLIAddition",
    "CLIStep",
    "Crash",
    "Failure",
    "OfflineBackend",
    "PromptCache",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedCLI",
    "ScriptedTurn",
    "Stall",
    "ToolResult",
    "is_cli_addition",
    "quiet_cli_env",
    "strip_noise",
]

_SOURCES = {
    "DUMMY_API_KEY": "._env",
    "CLIAddition": "._request",
    "CLIStep": "._cli",
    "Crash": "._cli",
    "Failure": "._script",
    "OfflineBackend": "._backend",
    "PromptCache": "._cache",
    "RecordedRequest": "._request",
    "ScriptExhaustedError": "._brain",
    "ScriptItem": "._brain",
    "ScriptedCLI": "._cli",
    "ScriptedTurn": "._script",
    "Stall": "._cli",
    "ToolResult": "._request",
    "is_cli_addition": "._request",
    "quiet_cli_env": "._env",
    "strip_noise": "._request",
}


__getattr__, __dir__ = lazy_exports(globals(), __all__, _SOURCES)
