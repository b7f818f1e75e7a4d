"""The ``claudecode-model`` command: run progress, prompt from stdin, login, doctor, and a light ``--help``."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import ClaudeCodeModel, cli
from claudecode_model._process.binary import find_cli
from claudecode_model._process.platform import linux
from claudecode_model.testing import OfflineBackend
from tests._support.subprocesses import run_python


def command(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_python("-m", "claudecode_model.cli", *args, stdin=stdin, timeout=120)


def doctor(config_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``claudecode-model doctor`` with no API key in its environment and ``config_dir`` as the CLI's config."""
    logged_out = {name: value for name, value in os.environ.items() if not name.startswith("ANTHROPIC_")}
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    return run_python("-m", "claudecode_model.cli", "doctor", *args, base_env=logged_out, env=env, timeout=120)


def test_help_does_not_import_pydantic_ai_or_the_sdk():
    code = (
        "import sys\n"
        "from claudecode_model import cli\n"
        "try:\n"
        "    cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "heavy = sorted(loaded & {'pydantic_ai', 'claude_agent_sdk', 'mcp', 'pydantic'})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    completed = run_python("-c", code, timeout=60)

    assert "usage: claudecode-model" in completed.stdout
    assert "HEAVY []" in completed.stderr


@pytest.mark.cli
def test_run_streams_the_answer_and_reports_tool_calls_and_usage_on_stderr():
    completed = command("run", "--offline", "--tools", "Read", "-", stdin="Read the file please\n")

    assert completed.returncode == 0, completed.stderr
    lines = completed.stderr.splitlines()
    assert lines[0] == '[tool] Read {"file_path": "a"}'
    assert re.fullmatch(r"\[tool\] Read failed in \d+\.\d\d s", lines[1])  # there is no file "a"
    done = re.fullmatch(
        r"\[done\] \d+ input and \d+ output tokens, 1 tool call\(s\); "
        r"cost \$\d+\.\d{6}; (\d+\.\d\d) s \(answered (\d+\.\d\d) s after the process started\); "
        r"session [0-9a-f-]{36}",
        lines[-1],
    )
    assert done is not None, lines[-1]
    run_seconds, since_start = float(done[1]), float(done[2])
    assert since_start >= run_seconds  # the first answer's time counts the process's start and imports too
    assert "File does not exist" in completed.stdout  # TestModel's answer echoes the tool result


def test_the_time_since_the_process_started_counts_the_interpreter_start():
    code = (
        "import time\n"
        "from claudecode_model.cli import seconds_since_process_start\n"
        "print(seconds_since_process_start(), time.monotonic())\n"
    )
    spawned = time.monotonic()
    completed = run_python("-c", code, timeout=60)
    assert completed.returncode == 0, completed.stderr
    since_start, now = map(float, completed.stdout.split())

    assert 0 < since_start <= now - spawned + 0.02  # the kernel counts in 10 ms ticks


def test_without_proc_the_time_is_counted_from_the_command_start(monkeypatch):
    def no_proc(*args: object, **kwargs: object) -> str:
        raise OSError("no /proc here")

    monkeypatch.setattr(linux, "open", no_proc, raising=False)  # what the Linux branch reads the start with

    assert cli.seconds_since_process_start() == pytest.approx(time.monotonic() - cli._IMPORTED, abs=0.5)


@pytest.mark.cli
def test_run_reads_the_prompt_from_stdin():
    completed = command("run", "--offline", "--no-stream", "-", stdin="What is 2+2?\n")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip()  # TestModel's answer
    assert completed.stderr.splitlines()[-1].startswith("[done] ")


@pytest.mark.parametrize(("prompt", "stdin"), [("", None), ("   ", None), ("-", ""), ("-", "\n\n")])
def test_an_empty_prompt_is_an_error(prompt: str, stdin: str | None, capsys: pytest.CaptureFixture[str], monkeypatch):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(stdin))

    assert cli.main(["run", "--offline", prompt]) == 2

    assert "error: the prompt is empty" in capsys.readouterr().err


@pytest.mark.cli
def test_verbose_shows_the_library_logs():
    quiet = command("run", "--offline", "--no-stream", "hello")
    verbose = command("run", "--offline", "--no-stream", "--verbose", "hello")

    assert quiet.returncode == verbose.returncode == 0, verbose.stderr
    assert "DEBUG claudecode_model" not in quiet.stderr
    assert "DEBUG claudecode_model.testing._backend: offline backend listening on http://127.0.0.1:" in verbose.stderr
    assert "DEBUG claudecode_model._sessions.session: Claude Code CLI started: pid " in verbose.stderr
    assert "INFO claudecode_model._turns.turn: Claude Code turn done in " in verbose.stderr


def test_login_runs_the_cli_auth_login_command(tmp_path: Path):
    record = tmp_path / "args"
    fake = tmp_path / "fake-cli"  # not named `claude`: it is no CLI (tests/_support/cli_guard.py)
    fake.write_text(f'#!/bin/sh\necho "$@" > {record}\nexit 3\n')
    fake.chmod(0o755)

    assert cli.main(["login", "--cli-path", str(fake), "--email", "me@example.com", "--console"]) == 3

    assert record.read_text().split() == ["auth", "login", "--console", "--email", "me@example.com"]


@pytest.mark.cli
def test_the_bundled_cli_has_the_auth_login_command():
    completed = subprocess.run(
        [str(find_cli()), "auth", "login", "--help"], capture_output=True, text=True, timeout=60, check=False
    )

    assert completed.returncode == 0
    assert "Sign in to your Anthropic account" in completed.stdout


@pytest.mark.cli
def test_doctor_prints_a_checklist_and_names_the_login_command(tmp_path: Path):
    completed = doctor(tmp_path)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    assert [line[:6] for line in lines] == ["[ok]  ", "[ok]  ", "[warn]", "[ok]  "], lines
    assert lines[1] == "[ok]   Claude Code version: in the tested range"
    assert "run `claudecode-model login`" in lines[2]
    assert lines[3].startswith("[ok]   offline round trip through the real CLI in ")


def test_doctor_says_when_the_cli_is_outside_the_tested_versions(tmp_path: Path):
    old_cli = tmp_path / "claude"
    old_cli.write_text("#!/bin/sh\necho '1.0.3 (Claude Code)'\n")
    old_cli.chmod(0o755)
    completed = doctor(tmp_path, "--cli-path", str(old_cli))

    lines = completed.stdout.splitlines()
    assert lines[0] == f"[ok]   Claude Code CLI: {old_cli} (1.0.3 (Claude Code))", lines
    assert lines[1].startswith("[warn] Claude Code version: Claude Code 1.0.3 is older than tested"), lines
    # That script is no CLI: the round trip fails, and doctor says so.
    assert lines[-1].startswith("[fail] offline round trip"), lines
    assert completed.returncode == 1


@pytest.mark.parametrize(("tools", "suggested"), [("Reed", "Read"), ("read", "Read"), ("Read,grep", "Grep")])
def test_run_refuses_unknown_builtin_tool_names(tools: str, suggested: str):
    completed = command("run", "--offline", "--tools", tools, "hello")

    assert completed.returncode == 2
    assert f"did you mean {suggested!r}?" in completed.stderr
    assert "Bash, " in completed.stderr  # the valid names
    assert completed.stdout == ""


class _TimedLines:
    """Stands in for stderr: each line written, with when it was written."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line:
                self.lines.append((time.perf_counter(), line))
        return len(text)

    def flush(self) -> None:
        pass


SLEEP_SECONDS = 2.0


def _sleeping_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the built-in Bash with a sleep, then the agent's own slow tool, then answers."""
    returned = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
    if not returned:
        return ModelResponse(parts=[ToolCallPart("Bash", {"command": f"sleep {SLEEP_SECONDS}"})])
    if len(returned) == 1:
        return ModelResponse(parts=[ToolCallPart("mcp__pydantic_tools__slow", {})])
    return ModelResponse(parts=[TextPart("done")])


@pytest.mark.cli
async def test_run_progress_lines_come_when_a_tool_starts_and_ends_with_its_real_duration(
    claude_backend: OfflineBackend, monkeypatch: pytest.MonkeyPatch
):
    claude_backend.set_brain(FunctionModel(_sleeping_brain))
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_builtin_tools": ["Bash"]})
    agent = Agent(model)

    @agent.tool_plain
    async def slow() -> str:
        await asyncio.sleep(SLEEP_SECONDS)
        return "rested"

    stderr = _TimedLines()
    monkeypatch.setattr(sys, "stderr", stderr)
    progress = cli._Progress(stream_text=False)
    try:
        await agent.run("sleep, then rest", event_stream_handler=progress.consume)
    finally:
        await model.aclose()
    monkeypatch.undo()

    [(bash_start, bash_line), (bash_end, bash_done), (slow_start, slow_line), (slow_end, slow_done)] = stderr.lines
    assert bash_line == f'[tool] Bash {{"command": "sleep {SLEEP_SECONDS}"}}'
    assert slow_line == "[tool] slow {}"
    for start, end, done, name in (
        (bash_start, bash_end, bash_done, "Bash"),
        (slow_start, slow_end, slow_done, "slow"),
    ):
        match = re.fullmatch(rf"\[tool\] {name} done in (\d+\.\d\d) s", done)
        assert match is not None, done
        assert end - start >= SLEEP_SECONDS  # the start line came when the tool started, not with its end
        assert float(match.group(1)) >= SLEEP_SECONDS


def _doctor_with(config_dir: Path, **env: str) -> list[str]:
    """The credential lines of ``doctor`` with ``env`` added (no round trip needed: they come first)."""
    logged_out = {name: value for name, value in os.environ.items() if not name.startswith("ANTHROPIC_")}
    completed = run_python(
        "-c",
        "from claudecode_model.cli import _credentials\nprint('\\n'.join(_credentials()))",
        base_env=logged_out,
        env={"CLAUDE_CONFIG_DIR": str(config_dir), **env},
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.splitlines()


def test_doctor_says_which_credential_a_run_bills(tmp_path: Path):
    login = tmp_path / ".credentials.json"
    login.write_text("{}")

    both = _doctor_with(tmp_path, ANTHROPIC_API_KEY="sk-ant-test")
    only_login = _doctor_with(tmp_path)

    assert both[0] == f"[ok]   credentials: ANTHROPIC_API_KEY, login in {login} (values not shown)"
    assert both[1].startswith("[warn] billing: runs bill ANTHROPIC_API_KEY, not the subscription login")
    assert "claude_code_auth='subscription'" in both[1]
    assert only_login[1] == f"[ok]   billing: runs bill the subscription login ({login})"
