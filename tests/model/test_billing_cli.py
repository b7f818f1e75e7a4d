"""Which credential a run bills, said out loud, and ``claude_code_auth``: checked on the headers the backend got.

Claude Code bills an API key in its environment before the subscription login (``x-api-key`` instead of
``Authorization: Bearer``). The offline backend's environment carries a dummy key; these tests add a login.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, ClaudeCodeSettingsError
from claudecode_model.testing import OfflineBackend

pytestmark = pytest.mark.cli

LOGIN_TOKEN = "sk-ant-oat01-offline-login"


def _log_in(backend: OfflineBackend) -> Path:
    """A subscription login in the backend's config dir (an OAuth token the CLI sends as it is)."""
    login = {
        "claudeAiOauth": {
            "accessToken": LOGIN_TOKEN,
            "refreshToken": "sk-ant-ort01-offline",
            "expiresAt": int(time.time() * 1000) + 3_600_000,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max",
        }
    }
    path = Path(backend.cli_env()["CLAUDE_CONFIG_DIR"], ".credentials.json")
    path.write_text(json.dumps(login))
    return path


async def _run(backend: OfflineBackend, **settings: object) -> dict[str, str]:
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, settings=settings)  # type: ignore[arg-type]
    try:
        await Agent(model).run("hi")
        await Agent(model).run("hi again")
    finally:
        await model.aclose()
    return backend.requests[-1].headers


async def test_with_a_key_and_a_login_the_key_bills_and_a_warning_says_so_once(
    claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture
):
    login = _log_in(claude_backend)
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        headers = await _run(claude_backend)

    assert "x-api-key" in headers
    assert "authorization" not in headers
    warnings = [record.getMessage() for record in caplog.records if "will bill" in record.getMessage()]
    assert warnings == [
        f"Claude Code will bill ANTHROPIC_API_KEY, not the subscription login in {login}: both are present and the "
        "CLI prefers the key. Set claude_code_auth='subscription' to keep the key away from the CLI, or 'api_key' "
        "to silence this."
    ]


async def test_auth_subscription_keeps_the_key_away_from_the_cli(
    claude_backend: OfflineBackend, caplog: pytest.LogCaptureFixture
):
    _log_in(claude_backend)
    with caplog.at_level(logging.WARNING, logger="claudecode_model"):
        headers = await _run(claude_backend, claude_code_auth="subscription")

    assert headers.get("authorization") == f"Bearer {LOGIN_TOKEN}"
    assert "x-api-key" not in headers
    assert not [record for record in caplog.records if "will bill" in record.getMessage()]


async def test_auth_api_key_without_a_key_is_refused_before_anything_starts(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    env = {**claude_backend.cli_env(), "ANTHROPIC_API_KEY": ""}
    model = ClaudeCodeModel(env=env, spare_sessions=0, settings={"claude_code_auth": "api_key"})
    try:
        with pytest.raises(ClaudeCodeSettingsError, match="claude_code_auth='api_key' needs ANTHROPIC_API_KEY"):
            await Agent(model).run("hi")
    finally:
        await model.aclose()

    assert claude_backend.requests == []
