"""A new process's first CLI starts before claude-agent-sdk is imported, and the SDK's session adopts exactly that
process (``_sessions/early_cli.py``), through the real CLI and the offline backend: in fresh interpreters (where the
SDK is not imported yet), and in this one for the prediction of each supported input."""

from __future__ import annotations

import json
import logging
import textwrap
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.exceptions import UnsupportedSettingWarning
from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, SQLiteSessionStore
from claudecode_model._process.temp import CLI_TEMP_PREFIX, TEMP_DIR_VARIABLE
from claudecode_model._sessions import early_cli
from claudecode_model._sessions.setting_table import PREDICTED
from claudecode_model.testing import OfflineBackend
from tests._support.subprocesses import run_python

pytestmark = pytest.mark.cli

ANSWER = '{"mcp__pydantic_tools__probe":"p0"}'
"""The default brain calls each tool once, then answers with what they returned."""

SCRIPT = textwrap.dedent(
    """
    import asyncio, dataclasses, json, os, sys, time

    import anyio

    spawns = []
    options_seen = []
    _open_process = anyio.open_process


    async def recording_open_process(command, **keywords):
        process = await _open_process(command, **keywords)
        spawns.append(
            {
                "pid": process.pid,
                "command": [str(part) for part in command],
                "sdk_imported": "claude_agent_sdk" in sys.modules,
                "temp": keywords["env"].get("CLAUDE_CODE_TMPDIR"),
            }
        )
        if len(spawns) == 1:  # the SDK is imported next anyway: record the options each session is started with
            from claudecode_model._sessions import session as _session

            init = _session.CLISession.__init__

            def recording_init(self, options, **kwargs):
                options_seen.append(options)
                init(self, options, **kwargs)

            _session.CLISession.__init__ = recording_init
            if MODE == "cancel":
                task.cancel()
        return process


    anyio.open_process = recording_open_process

    from pydantic_ai import Agent

    from claudecode_model import ClaudeCodeModel
    from claudecode_model._sessions import early_cli as _early_cli

    MODE = os.environ["MODE"]
    task = None
    if MODE == "mismatch":
        predict = _early_cli.predict_launch

        def wrong_prediction(*args):
            prediction, why = predict(*args)
            return dataclasses.replace(prediction, command=[*prediction.command, "--verbose"]), why

        _early_cli.predict_launch = wrong_prediction
    if MODE == "interrupt":  # Ctrl-C while the SDK is imported, the early CLI running

        def interrupted():
            raise KeyboardInterrupt

        _early_cli.load_sdk = interrupted

    model = ClaudeCodeModel(
        env=json.loads(os.environ["CLI_ENV"]),
        spare_sessions=1 if MODE == "spare" else 0,
        tool_transport="stdio" if MODE == "stdio" else "auto",
    )
    agent = Agent(model, instructions="Be brief.")


    @agent.tool_plain
    def probe(n: int) -> str:
        \"\"\"A probe value for n.\"\"\"
        return f"p{n}"


    async def main():
        global task
        task = asyncio.create_task(agent.run("Call probe, then answer."))
        try:
            output = (await task).output
        except asyncio.CancelledError:
            output = None
            # The given-up start is closed in the background (as without an early CLI): give it time to finish.
            for _ in range(100):
                if not any(s["temp"] and os.path.exists(s["temp"]) for s in spawns):
                    break
                await asyncio.sleep(0.1)
        answered = list(spawns)
        if MODE == "spare":  # the next new conversation takes the spare started after the first
            await model.prewarm(agent)  # up (else a conversation right after takes the kept CLI, rewound)
            second = await agent.run("Call probe, then answer.")
            report["second"] = [second.output, second.all_messages()[-1].provider_details["session_source"]]
        await model.aclose()
        return output, answered


    report = {}
    try:
        report["output"], answered = asyncio.run(main())
    except KeyboardInterrupt:
        report["output"], answered = "interrupted", list(spawns)
    from claudecode_model._compat import sdk_cli_command

    report["spawns"] = answered
    report["sdk_commands"] = [sdk_cli_command(options) for options in options_seen]
    time.sleep(0.3)
    report["alive"] = [s["pid"] for s in answered if os.path.exists(f"/proc/{s['pid']}")
                       and open(f"/proc/{s['pid']}/stat").read().split(")")[-1].split()[0] != "Z"]


    def live_child(pid):
        try:
            state, ppid = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            return False
        return ppid == str(os.getpid()) and state != "Z"


    # any process this one started that still runs (the CLI, a spare, the bridge)
    report["children_left"] = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and live_child(pid)]
    report["temps_left"] = [  # this package's private folders (not one the user chose)
        s["temp"] for s in answered
        if s["temp"] and os.path.basename(s["temp"]).startswith("claudecode_cli_") and os.path.exists(s["temp"])
    ]
    print(json.dumps(report))
    """
)


def run_fresh(backend: OfflineBackend, mode: str, *, own_temp: bool = True) -> dict[str, Any]:
    """Run :data:`SCRIPT` in a new interpreter; ``own_temp``: the CLI gets this package's private temp folder
    (the backend's environment names one of its own otherwise)."""
    env = backend.cli_env()
    if own_temp:
        env.pop(TEMP_DIR_VARIABLE)
    completed = run_python("-c", SCRIPT, timeout=120, env={"CLI_ENV": json.dumps(env), "MODE": mode})
    assert completed.returncode == 0, completed.stderr[-3000:]
    report: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


def test_the_first_cli_starts_before_the_sdk_is_imported_and_the_session_adopts_it(
    claude_backend: OfflineBackend,
) -> None:
    report = run_fresh(claude_backend, "adopt")

    assert report["output"] == ANSWER
    [spawn] = report["spawns"]  # one process, started before the import: the session's own
    assert spawn["sdk_imported"] is False
    assert report["sdk_commands"] == [spawn["command"]]  # exactly the command line the SDK builds for it
    assert Path(spawn["temp"]).name.startswith(CLI_TEMP_PREFIX)  # its private temp folder, removed with it
    assert report["alive"] == []
    assert report["children_left"] == []
    assert report["temps_left"] == []


def test_after_an_adopted_first_cli_the_next_conversation_takes_a_spare(claude_backend: OfflineBackend) -> None:
    report = run_fresh(claude_backend, "spare")

    assert report["output"] == ANSWER
    assert report["spawns"][0]["sdk_imported"] is False
    assert report["second"] == [ANSWER, "spare"]
    assert report["alive"] == []
    assert report["children_left"] == []


def test_over_the_stdio_transport_the_first_cli_starts_after_the_import(claude_backend: OfflineBackend) -> None:
    report = run_fresh(claude_backend, "stdio")

    assert report["output"] == ANSWER
    [cli] = [spawn for spawn in report["spawns"] if "--mcp-config" in spawn["command"]]  # not the IPC bridge
    assert cli["sdk_imported"] is True
    assert report["alive"] == []
    assert report["children_left"] == []


@pytest.mark.parametrize("own_temp", [True, False], ids=["private-temp", "user-temp"])
def test_a_wrong_prediction_stops_the_early_cli_and_the_sdk_starts_its_own(
    claude_backend: OfflineBackend, own_temp: bool
) -> None:
    report = run_fresh(claude_backend, "mismatch", own_temp=own_temp)

    assert report["output"] == ANSWER
    early, started_by_sdk = report["spawns"]
    assert early["sdk_imported"] is False
    assert started_by_sdk["sdk_imported"] is True
    assert early["command"] == [*started_by_sdk["command"], "--verbose"]
    assert report["sdk_commands"] == [started_by_sdk["command"]]
    assert early["temp"] == started_by_sdk["temp"]  # the session got the folder reserved for it
    assert report["alive"] == []
    assert report["children_left"] == []
    assert report["temps_left"] == []


@pytest.mark.parametrize("mode", ["cancel", "interrupt"])
def test_a_request_cancelled_or_interrupted_while_the_sdk_is_imported_stops_the_early_cli(
    claude_backend: OfflineBackend, mode: str
) -> None:
    report = run_fresh(claude_backend, mode)

    assert report["output"] == (None if mode == "cancel" else "interrupted")
    assert report["spawns"][0]["sdk_imported"] is False
    assert report["alive"] == []
    assert report["children_left"] == []
    assert report["temps_left"] == []


# --- the prediction, input by input (in this interpreter: the SDK is imported, the early start is forced) --------


class City(BaseModel):
    name: str


def _probe(n: int) -> str:
    """A probe value for n."""
    return f"p{n}"


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], ClaudeCodeModelSettings]] = {
    # name: (model arguments, agent arguments, model settings)
    "plain": ({}, {}, {}),
    "tools-instructions-system-prompt": (
        {},
        {"tools": [_probe], "instructions": "Be brief.", "system_prompt": "S"},
        {},
    ),
    "output-tool-model-name": ({"model_name": "claude-sonnet-4-5"}, {"output_type": ToolOutput(City)}, {}),
    "native-output": ({}, {"output_type": City}, {}),
    "sdk-transport-cli-execution": ({"tool_transport": "sdk", "tool_execution": "cli"}, {"tools": [_probe]}, {}),
    "settings": (
        {},
        {"tools": [_probe]},
        {
            "claude_code_env": {"EXTRA": "1"},
            "max_tokens": 2000,
            "max_retries": 1,
            "claude_code_max_turns": 5,
            "claude_code_allowed_tools": ["Read"],
            "claude_code_disallowed_tools": ["Bash"],
            "claude_code_permission_mode": "default",
            "claude_code_setting_sources": ["project"],
            "claude_code_system_prompt_append": "Appended.",
            "claude_code_extra_args": {"verbose": None, "add-dir": "/"},
            "claude_code_timeout": 120,
            "timeout": 120,
            "claude_code_inactivity_timeout": 100,
            "claude_code_limit_reset_wait": 5,
            "claude_code_interpret_prompts": True,
            "claude_code_session": "new",
            "claude_code_tool_execution": "agent",
            "claude_code_compaction": True,
            "claude_code_auth": "auto",
            "temperature": 0.5,
        },
    ),
}

NEEDS_A_FOLDER = {"claude_code_cwd"}
"""Predicted settings a case gets when it runs (the test's own folder)."""


def test_the_cases_cover_every_setting_the_table_says_is_predicted() -> None:
    covered = {name for _, _, settings in CASES.values() for name in settings} | NEEDS_A_FOLDER

    assert sorted(PREDICTED - covered) == []


@pytest.mark.parametrize("case", list(CASES))
async def test_the_prediction_is_what_the_sdk_starts(
    claude_backend: OfflineBackend,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    case: str,
) -> None:
    model_arguments, agent_arguments, settings = CASES[case]
    if "claude_code_setting_sources" in settings:
        settings = {**settings, "claude_code_cwd": str(tmp_path)}
    monkeypatch.setattr(early_cli, "_sdk_imported", lambda: False)
    caplog.set_level(logging.DEBUG, logger=early_cli.__name__)
    model = ClaudeCodeModel(env=claude_backend.cli_env(), spare_sessions=0, **model_arguments)
    agent: Agent[None, Any] = Agent(model, model_settings=settings, **agent_arguments)
    # A setting the CLI cannot pass on warns and leaves the prediction as it is.
    ignored = (
        pytest.warns(UnsupportedSettingWarning, match="temperature") if "temperature" in settings else nullcontext()
    )
    try:
        with ignored:
            await agent.run("Answer.")
    finally:
        await model.aclose()

    messages = [record.getMessage() for record in caplog.records if record.name == early_cli.__name__]
    assert any(message.startswith("the session adopted the CLI started") for message in messages), messages


@pytest.mark.parametrize(
    ("model_arguments", "settings", "messages", "why"),
    [
        ({"tool_transport": "stdio"}, {}, None, "the stdio tool transport"),
        ({}, {"claude_code_effort": "low"}, None, "settings ['claude_code_effort'] are not predicted"),
        ({}, {"thinking": True}, None, "settings ['thinking'] are not predicted"),
        ({}, {}, "history", "the history has responses (resume or replay)"),
        ({"session_store": "sqlite"}, {}, None, "the model has a session store"),
    ],
)
def test_cases_not_predicted_start_the_cli_after_the_import(
    tmp_path: Path, model_arguments: dict[str, Any], settings: dict[str, Any], messages: str | None, why: str
) -> None:
    if model_arguments.get("session_store") == "sqlite":
        model_arguments = {"session_store": SQLiteSessionStore(tmp_path / "store.db")}
    model = ClaudeCodeModel(**model_arguments)
    history: list[Any] = [ModelRequest(parts=[UserPromptPart("hi")])]
    if messages == "history":
        history += [ModelResponse(parts=[TextPart("hello")]), ModelRequest(parts=[UserPromptPart("again")])]
    params = ModelRequestParameters(
        function_tools=[ToolDefinition(name="probe", parameters_json_schema={"type": "object"})]
    )

    prediction, reason = early_cli.predict_launch(model._resources, history, settings, params)

    assert prediction is None
    assert reason == why


def test_a_cli_known_to_predate_in_process_servers_is_not_predicted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(early_cli, "cli_version", lambda path: (1, 9, 0))
    params = ModelRequestParameters(
        function_tools=[ToolDefinition(name="probe", parameters_json_schema={"type": "object"})]
    )

    prediction, reason = early_cli.predict_launch(
        ClaudeCodeModel()._resources, [ModelRequest(parts=[UserPromptPart("hi")])], {}, params
    )

    assert prediction is None
    assert reason == "the stdio tool transport"


def test_an_unsampled_trace_parent_matches_another() -> None:
    launch = early_cli.Launch(["claude"], {"TRACEPARENT": "00-aa-bb-00", "A": "1"}, None)
    keywords = launch.keywords()

    assert launch.difference(["claude"], {**keywords, "env": {"TRACEPARENT": "00-cc-dd-00", "A": "1"}}) is None
    assert launch.difference(["claude"], {**keywords, "env": {"TRACEPARENT": "00-cc-dd-01", "A": "1"}}) == (
        "environment variables ['TRACEPARENT']"
    )
    assert launch.difference(["claude", "-x"], keywords) == "command line of 2 arguments instead of 1"
    assert launch.difference(["claude"], {**keywords, "cwd": "/"}) == "cwd '/' instead of None"


def test_importing_the_path_up_to_the_early_start_leaves_the_sdk_unimported() -> None:
    code = (
        "import sys\n"
        "import claudecode_model._sessions.early_cli, claudecode_model._turns.run_scope, claudecode_model._resources\n"
        "from claudecode_model._compat import bundled_cli_version, sdk_version\n"
        "bundled_cli_version(), sdk_version()\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('claude_agent_sdk', 'mcp')))\n"
    )
    completed = run_python("-c", code, timeout=60)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_a_system_prompt_too_long_for_the_command_line_is_not_predicted() -> None:
    history: list[Any] = [ModelRequest(parts=[SystemPromptPart("x" * (65 * 1024)), UserPromptPart("hi")])]

    prediction, reason = early_cli.predict_launch(ClaudeCodeModel()._resources, history, {}, ModelRequestParameters())

    assert prediction is None
    assert reason == "a system prompt passed in a file"


async def test_with_one_cpu_the_first_cli_starts_after_the_import(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(early_cli, "_sdk_imported", lambda: False)
    monkeypatch.setattr(early_cli, "_usable_cpus", lambda: 1)
    caplog.set_level(logging.DEBUG, logger=early_cli.__name__)

    early = await early_cli.start_early_cli(
        ClaudeCodeModel()._resources, [ModelRequest(parts=[UserPromptPart("hi")])], {}, ModelRequestParameters()
    )

    assert early is None
    assert "one CPU, nothing to overlap" in caplog.text
