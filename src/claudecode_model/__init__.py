"""claudecode-model: pydantic-ai agents on Claude through the Claude Code CLI."""

from claudecode_model.exceptions import *  # noqa: F403
from claudecode_model.exceptions import __all__ as _exceptions_all

__all__ = [*_exceptions_all]
