"""The switches set in the CLI's environment for a request (``_sessions/cli_env.py``), one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudecode_model import ClaudeCodeSettingsError
from claudecode_model._sessions.cli_env import library_env

NO_LOGIN = {"CLAUDE_CONFIG_DIR": "/nonexistent", "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}


def test_by_default_claude_code_never_compacts():
    assert library_env({}, None, NO_LOGIN) == {"DISABLE_COMPACT": "1"}


def test_compaction_on_request():
    assert library_env({"claude_code_compaction": True}, None, NO_LOGIN) == {}


@pytest.mark.parametrize(
    ("cache", "added"),
    [
        (None, {}),
        (True, {}),
        (False, {"DISABLE_PROMPT_CACHING": "1"}),
        ("1h", {"CLAUDE_CODE_PROMPT_CACHE_TTL": "1h"}),
        ("5m", {"CLAUDE_CODE_PROMPT_CACHE_TTL": "5m"}),
        ({"retention": "1h"}, {"CLAUDE_CODE_PROMPT_CACHE_TTL": "1h"}),
    ],
)
def test_the_cache_setting(cache: object, added: dict[str, str]):
    assert library_env({"claude_code_compaction": True}, cache, NO_LOGIN) == added


def test_the_users_own_entries_win():
    env = {**NO_LOGIN, "DISABLE_COMPACT": "0", "DISABLE_PROMPT_CACHING": "0"}

    assert library_env({}, False, env) == {}


def test_subscription_blanks_an_inherited_key_even_one_the_model_was_given(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-inherited")
    env = {"CLAUDE_CONFIG_DIR": "/nonexistent", "ANTHROPIC_AUTH_TOKEN": "token"}

    added = library_env({"claude_code_auth": "subscription", "claude_code_compaction": True}, None, env)

    assert added == {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}


def test_api_key_requires_a_key(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)

    with pytest.raises(ClaudeCodeSettingsError, match="needs ANTHROPIC_API_KEY"):
        library_env({"claude_code_auth": "api_key"}, None, NO_LOGIN)
    assert library_env({"claude_code_auth": "api_key"}, None, {**NO_LOGIN, "ANTHROPIC_API_KEY": "k"}) == {
        "DISABLE_COMPACT": "1"
    }


def test_a_key_and_a_login_warn_once(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    (tmp_path / ".credentials.json").write_text("{}")
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "ANTHROPIC_API_KEY": "k"}

    library_env({}, None, env)
    library_env({}, None, env)
    library_env({"claude_code_auth": "api_key"}, None, env)  # chosen: no warning

    assert [r.levelname for r in caplog.records if "will bill ANTHROPIC_API_KEY" in r.getMessage()] == ["WARNING"]
