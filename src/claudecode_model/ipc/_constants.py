"""Constants of the IPC bridge and of its wire protocol.

Standard library only, and not even ``typing`` at run time: the bridge process imports this module at
start-up.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    from claudecode_model.ipc._types import TransportType

__all__ = [
    "BRIDGE_MODULE",
    "DEFAULT_TRANSPORT",
    "DIRECTORY_MODE",
    "HELLO_MAX_SIZE",
    "LENGTH_PREFIX_SIZE",
    "MAX_MESSAGE_SIZE",
    "SCHEMA_FILE_PREFIX",
    "SECRET_ENV_VAR",
    "SOCKET_FILE_PREFIX",
    "SOCKET_FILE_SUFFIX",
    "SOCKET_PERMISSIONS",
    "TOOL_USE_ID_META_KEY",
]

MAX_MESSAGE_SIZE: Final = 10_485_760
"""Largest IPC message body in bytes (10 MiB), enforced on sending and on receiving."""

SOCKET_PERMISSIONS: Final = 0o600
"""Mode of the Unix socket file (and of the schema file): owner only."""

SCHEMA_FILE_PREFIX: Final = "claudecode_ipc_schema_"
"""Prefix of the tool schema file."""

SOCKET_FILE_PREFIX: Final = "claudecode_ipc_"
"""Prefix of the Unix socket file (and of the private directory that holds it)."""

SOCKET_FILE_SUFFIX: Final = ".sock"
"""Suffix of the Unix socket file."""

LENGTH_PREFIX_SIZE: Final = 4
"""Size in bytes of the big-endian length prefix of every IPC message."""

DEFAULT_TRANSPORT: Final[TransportType] = "auto"
"""Default tool transport."""

# --- beyond the original spec -------------------------------------------------------------------------------

SECRET_ENV_VAR: Final = "CLAUDECODE_IPC_SECRET"
"""Environment variable through which the bridge receives the session secret (never on its command line)."""

DIRECTORY_MODE: Final = 0o700
"""Mode of the private directory holding the socket and the schema file."""

HELLO_MAX_SIZE: Final = 4096
"""Largest first (authentication) frame the server reads from a connection it has not authenticated yet."""

TOOL_USE_ID_META_KEY: Final = "claudecode/toolUseId"
"""Key of the Anthropic ``tool_use`` id in the ``_meta`` the Claude Code CLI sends with every
``tools/call``."""

BRIDGE_MODULE: Final = "claudecode_model.ipc.bridge"
"""Module run by ``python -m`` to start the bridge."""
