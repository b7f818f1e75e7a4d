"""The provider name of Claude Code responses and the keys this package writes into ``provider_details``."""

from __future__ import annotations

__all__ = [
    "ABORTED_ATTEMPTS_KEY",
    "API_RETRIES_KEY",
    "APPROVED_CALL_KEY",
    "CLI_TOOL_NAME_KEY",
    "COMPACTED_KEY",
    "FIRST_TOKEN_KEY",
    "HISTORY_DIGEST_KEY",
    "PARENT_TOOL_CALL_ID_KEY",
    "PROVIDER_NAME",
    "RATE_LIMIT_KEY",
    "RESUME_AT_KEY",
    "SESSION_ID_KEY",
    "SESSION_STORE_KEY",
]

PROVIDER_NAME = "claude-code"
"""``ModelResponse.provider_name`` (and the provider of thinking and native tool parts) of Claude Code responses."""

SESSION_ID_KEY = "session_id"
"""The CLI session that produced a response."""

HISTORY_DIGEST_KEY = "history_digest"
"""Digest of the conversation up to and including a response (see
:func:`~claudecode_model._history.digest.history_digest`)."""

CLI_TOOL_NAME_KEY = "cli_tool_name"
"""The name the CLI gave a tool call (``mcp__<server>__<tool>`` for MCP tools), kept to replay it faithfully."""

PARENT_TOOL_CALL_ID_KEY = "parent_tool_call_id"
"""Of a part produced inside a subagent: the id of the ``Agent`` call that started it (such parts are not replayed)."""

RESUME_AT_KEY = "resume_session_at"
"""The transcript entry of the CLI session where a response ends: a later turn resumes (or branches) from there."""

ABORTED_ATTEMPTS_KEY = "aborted_attempts"
"""How many API responses of the turn were cut and asked again by the CLI (their parts are not in the response)."""

FIRST_TOKEN_KEY = "first_token_seconds"
"""Seconds from the request to the first token of the answer (the first streamed delta, or the first message)."""

SESSION_STORE_KEY = "session_store"
"""``"incomplete"`` when the session store's copy of the session lacks part of the conversation (a write failed or
timed out): other workers replay the history instead of resuming it, until a later turn on this worker writes it."""

APPROVED_CALL_KEY = "approved_call"
"""Of a native tool return: it is what Claude Code made of a built-in call pydantic-ai approved or denied (that call
has the approval as its ``ToolReturnPart`` already; this is its output)."""

RATE_LIMIT_KEY = "rate_limit"
"""The rate-limit state Claude Code reported during the turn: ``status`` (``allowed``, ``allowed_warning``,
``rejected``), ``type`` (``five_hour``, ``seven_day``, ...), ``utilization`` (0..1), ``resets_at`` (Unix time), and
the overage fields when known."""

API_RETRIES_KEY = "api_retries"
"""The API requests Claude Code retried by itself during the turn, in order: ``attempt``, ``max_retries``,
``retry_delay_ms``, ``error_status`` and ``error`` as the CLI reported them (its ``api_retry`` messages)."""
COMPACTED_KEY = "compacted"
"""Set when Claude Code compacted the conversation during the turn (only with ``claude_code_compaction=True``): one
entry per compaction (``trigger``, ``pre_tokens``, ``post_tokens``). Claude then saw a summary of the earlier
conversation, while pydantic-ai's history still holds every message."""
