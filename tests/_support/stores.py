"""Helpers of the session store tests: workers that share only the store, store keys, a brain counting prompts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from claude_agent_sdk import project_key_for_directory
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey
    from pydantic_ai.models.function import AgentInfo

    from claudecode_model.testing import OfflineBackend


def delete_sqlite_file(path: Path) -> None:
    """Delete a SQLite database file and its WAL files, as someone tidying up a disk might while it is in use."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def counting_echo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers with the last user text and how many user prompts it saw, so tests can tell what reached it."""
    prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    return ModelResponse(parts=[TextPart(f"echo: {prompts[-1]} (prompts seen: {len(prompts)})")])


def worker_env(backend: OfflineBackend, root: Path, name: str) -> dict[str, str]:
    """The CLI environment of a "worker" ``name``: a ``CLAUDE_CONFIG_DIR`` of its own under ``root`` (what one
    worker's CLI writes on its disk, another cannot see)."""
    config_dir = root / name
    config_dir.mkdir()
    return backend.cli_env(config_dir=config_dir)


def store_key(session_id: str) -> SessionKey:
    """The key a session store keeps the CLI session ``session_id`` of this working directory under."""
    return {"project_key": project_key_for_directory(os.getcwd()), "session_id": session_id}
