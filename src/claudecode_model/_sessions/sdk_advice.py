"""claude-agent-sdk's advice on options the library builds on purpose, kept from the user while a CLI connects.

The SDK warns (``CanUseToolShadowedWarning``) when ``can_use_tool`` is set beside allow rules for whole tools,
because those tools then never reach the callback. A session whose built-in calls wait for approval sets both on
purpose: the tools the user granted run unasked, and only the tools under approval reach the callback. The warning
would tell the user about a configuration they did not write, so it is ignored while such a session connects.

``warnings.catch_warnings`` changes the process's filters and restores them when it ends; connects of several
sessions overlap in time, so the first one in installs the filter and the last one out restores the previous
filters (a counter under a lock, as sessions start on several threads' event loops).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

from claude_agent_sdk import CanUseToolShadowedWarning

__all__ = ["sdk_advice_silenced"]

_lock = threading.Lock()
_users = 0
_silencer: warnings.catch_warnings[None] | None = None


@contextlib.contextmanager
def sdk_advice_silenced(active: bool) -> Iterator[None]:
    """While the block runs (and ``active``), the SDK's ``CanUseToolShadowedWarning`` is not shown."""
    if not active:
        yield
        return
    global _users, _silencer
    with _lock:
        if _users == 0:
            _silencer = warnings.catch_warnings()
            _silencer.__enter__()
            warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _silencer is not None:
                _silencer.__exit__(None, None, None)
                _silencer = None
