"""The parent side of the IPC bridge under the module path of earlier releases.

:class:`IPCSession` serves tool calls to the bridge over a private, authenticated Unix socket; ``ToolHandler``
is the handler type it takes. The unauthenticated ``IPCServer`` of earlier releases is gone on purpose (see
``docs/compatibility.md``): an ``IPCSession`` is the replacement.
"""

from __future__ import annotations

from claudecode_model.ipc._session import IPCSession, IPCSessionState
from claudecode_model.ipc._types import MetaToolHandler, ToolHandler

__all__ = ["IPCSession", "IPCSessionState", "MetaToolHandler", "ToolHandler"]
