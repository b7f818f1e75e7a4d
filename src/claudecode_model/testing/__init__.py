"""Offline testing support: a local Anthropic Messages API backend for the real Claude Code CLI.

Point the CLI at :class:`OfflineBackend` (``backend.cli_env()``) and its answers come from a pydantic-ai
model (``TestModel`` behaviour by default, a ``FunctionModel`` function, or a script of turns) with no
account and no network. Every request is recorded (:class:`RecordedRequest`) and failures can be injected
(:class:`Failure`).
"""

from __future__ import annotations

from ._backend import OfflineBackend
from ._brain import ScriptExhaustedError, ScriptItem
from ._env import DUMMY_API_KEY, quiet_cli_env
from ._request import RecordedRequest, ToolResult, strip_noise
from ._script import Failure, ScriptedTurn

__all__ = [
    "DUMMY_API_KEY",
    "Failure",
    "OfflineBackend",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedTurn",
    "ToolResult",
    "quiet_cli_env",
    "strip_noise",
]
