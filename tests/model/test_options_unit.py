"""Unit tests of CLI discovery and of the options every request starts from (safe defaults)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from claudecode_model import CLINotFoundError
from claudecode_model._process.binary import bundled_cli_path, find_cli
from claudecode_model._sessions.options import BuiltOptions
from tests._support.options import options_for


def test_explicit_cli_path_wins(tmp_path: Path):
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\n")
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)

    assert find_cli(cli) == cli


def test_bundled_cli_comes_before_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    on_path = tmp_path / "claude"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    assert find_cli() == bundled_cli_path()


def test_missing_explicit_cli_says_how_to_install():
    with pytest.raises(CLINotFoundError, match="pip install claude-agent-sdk") as caught:
        find_cli("/nonexistent/claude")
    assert caught.value.searched == ["/nonexistent/claude"]


def _options(**settings: object):
    return options_for(settings)


def test_safe_defaults_no_builtin_tools_no_settings_no_bypass():
    options, _ = _options()

    assert options.tools == []
    assert options.setting_sources == []
    assert options.strict_mcp_config is True
    assert options.permission_mode == "dontAsk"
    assert options.allowed_tools == []
    assert options.include_partial_messages is True
    # Never recorded in the transcript (a resumed session gets the next request's prompt); prompts sent literally.
    assert options.system_prompt == {"type": "custom", "prompt": "sys", "snapshot": False}
    assert options.verbatim_prompts is True


def test_settings_reach_the_options():
    options, _ = _options(
        claude_code_builtin_tools=["Read", "Grep"],
        claude_code_max_turns=3,
        claude_code_max_budget_usd=0.5,
        claude_code_system_prompt_append="extra",
        claude_code_thinking="disabled",
        max_tokens=1000,
        max_retries=0,
        claude_code_env={"FOO": "bar"},
    )

    assert options.tools == ["Read", "Grep"]
    assert options.allowed_tools == ["Read", "Grep"]
    assert options.max_turns == 3
    assert options.max_budget_usd == 0.5
    assert options.system_prompt == {"type": "custom", "prompt": "sys\n\nextra", "snapshot": False}
    assert options.thinking == {"type": "disabled"}
    assert options.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "1000"
    assert options.env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert options.env["CLAUDE_CODE_DISABLE_THINKING"] == "1"
    assert options.env["FOO"] == "bar"


def test_the_cli_is_not_asked_for_session_state_frames():
    options, _ = _options()

    assert options.env["CLAUDE_CODE_SDK_READS_SESSION_STATE"] == "0"


@pytest.mark.parametrize("name", ["CLAUDE_CODE_SDK_READS_SESSION_STATE", "claude_code_sdk_reads_session_state"])
def test_a_session_state_choice_of_the_user_is_kept(name: str):
    options, _ = _options(claude_code_env={name: "1"})

    assert options.env[name] == "1"
    assert [key for key in options.env if key.upper() == "CLAUDE_CODE_SDK_READS_SESSION_STATE"] == [name]


def test_a_session_state_choice_in_the_process_environment_is_kept(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLAUDE_CODE_SDK_READS_SESSION_STATE", "1")

    options, _ = _options()

    assert "CLAUDE_CODE_SDK_READS_SESSION_STATE" not in options.env


def test_signature_changes_with_what_fixes_a_session():
    _, plain = _options()
    _, same = _options()
    _, other = _options(claude_code_max_turns=2)

    assert plain == same
    assert plain != other


def test_preset_builtin_tools():
    options, _ = _options(claude_code_builtin_tools="claude_code")

    assert options.tools == {"type": "preset", "preset": "claude_code"}
    assert os.environ.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS") is None


def test_built_options_are_reused_only_for_equal_inputs():
    built = BuiltOptions()
    settings: dict[str, object] = {"claude_code_allowed_tools": ["Read"]}
    built.put((settings, "sys"), "first")

    assert built.get(({"claude_code_allowed_tools": ["Read"]}, "sys")) == "first"
    assert built.get((settings, "other system prompt")) is None
    settings["claude_code_allowed_tools"].append("Write")  # type: ignore[attr-defined]
    assert built.get((settings, "sys")) is None  # the key was copied: a settings dict changed in place is new


def test_built_options_keep_the_last_few_and_skip_what_cannot_be_kept():
    built = BuiltOptions()
    for index in range(BuiltOptions.SIZE + 1):
        built.put(index, f"value {index}")

    assert built.get(0) is None
    assert built.get(BuiltOptions.SIZE) == f"value {BuiltOptions.SIZE}"

    class Uncopyable:
        def __deepcopy__(self, memo: object) -> object:
            raise TypeError("no copies")

    class Incomparable:
        def __eq__(self, other: object) -> bool:
            raise ValueError("no comparisons")

        __hash__ = object.__hash__

    built.put(Uncopyable(), "never kept")
    built.put(Incomparable(), "kept")
    assert built.get(Incomparable()) is None  # comparing fails: a miss, not an error


async def test_a_cli_that_cannot_deliver_prompts_literally_is_refused_unless_interpreting_is_chosen(tmp_path: Path):
    from claudecode_model import ClaudeCodeSettingsError
    from claudecode_model._sessions.options import require_literal_prompts

    old = tmp_path / "claude"
    old.write_text("#!/bin/sh\necho '2.1.200 (Claude Code)'\n")
    old.chmod(0o755)

    with pytest.raises(ClaudeCodeSettingsError, match=r"2\.1\.200.*2\.1\.248.*claude_code_interpret_prompts"):
        await require_literal_prompts(old, {})
    await require_literal_prompts(old, {"claude_code_interpret_prompts": True})
    await require_literal_prompts(bundled_cli_path() or old, {})  # the bundled CLI delivers text literally
    built, _ = options_for({"claude_code_interpret_prompts": True}, cli_path=old, system_prompt=None)
    assert built.verbatim_prompts is False
