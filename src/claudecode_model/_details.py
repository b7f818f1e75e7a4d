"""The provider name of Claude Code responses and the keys this package writes into ``provider_details``."""

from __future__ import annotations

PROVIDER_NAME = "claude-code"
"""``ModelResponse.provider_name`` (and the provider of thinking and native tool parts) of Claude Code responses."""

SESSION_ID_KEY = "session_id"
"""The CLI session that produced a response."""

HISTORY_DIGEST_KEY = "history_digest"
"""Digest of the conversation up to and including a response (see :func:`~claudecode_model._digest.history_digest`)."""

CLI_TOOL_NAME_KEY = "cli_tool_name"
"""The name the CLI gave a tool call (``mcp__<server>__<tool>`` for MCP tools), kept to replay it faithfully."""

SESSION_SOURCE_KEY = "session_source"
"""How the turn got its CLI session: ``"spare"``, ``"live"``, ``"resume"``, ``"replay"``, ``"fork"`` or ``"new"``."""

FIRST_TOKEN_KEY = "first_token_seconds"
"""Seconds from the request to the first token of the answer (the first streamed delta, or the first message)."""
