"""pytest plugin of claudecode-model: fixtures for the offline backend.

``claude_backend`` is a started :class:`~claudecode_model.testing.OfflineBackend` (function scope; change its
brain with ``claude_backend.set_brain(...)``); ``claude_cli_env`` is its ``cli_env()``. The backend module is
imported only when a fixture is used, so the plugin costs nothing in sessions that do not use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from claudecode_model.testing import OfflineBackend

__all__ = ["claude_backend", "claude_cli_env"]


@pytest.fixture
def claude_backend() -> Iterator[OfflineBackend]:
    """A running offline backend with the default (TestModel-like) brain, stopped after the test."""
    from claudecode_model.testing import OfflineBackend

    with OfflineBackend() as backend:
        yield backend


@pytest.fixture
def claude_cli_env(claude_backend: OfflineBackend) -> dict[str, str]:
    """The environment that points the Claude Code CLI at ``claude_backend``."""
    return claude_backend.cli_env()
