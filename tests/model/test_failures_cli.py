"""Failed turns are classified for what they are, through the real CLI (and fake CLIs for transport failures); the
other combinations of a prompt too long, and the five-hour limit, from the CLI's messages in ``test_failures.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_agent_sdk import CLIConnectionError as SDKCLIConnectionError
from claude_agent_sdk import CLIJSONDecodeError as SDKCLIJSONDecodeError
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
)

from claudecode_model import (
    ClaudeCodeAuthenticationError,
    ClaudeCodeContextWindowExceededError,
    ClaudeCodeModel,
    CLIConnectionError,
    CLINotFoundError,
    CLIProcessError,
    CLIResponseParseError,
)
from claudecode_model._stream.failures import map_sdk_error
from claudecode_model.settings import ClaudeCodeModelSettings
from claudecode_model.testing import Failure, OfflineBackend
from tests._support.api_errors import assert_prompt_too_long, run_error

pytestmark = pytest.mark.cli

TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"


@pytest.mark.parametrize(
    ("failure", "compaction"),
    [
        (Failure.http(400, TOO_LONG, error_type="invalid_request_error"), False),
        (Failure.sse_error("invalid_request_error", TOO_LONG), True),  # the stream's error event carries no 400
    ],
    ids=["http-400-default", "sse-error-compaction"],
)
async def test_a_prompt_too_long_is_a_context_window_error(claude_backend: OfflineBackend, failure, compaction: bool):
    claude_backend.fail_next(failure, count=3)
    settings: ClaudeCodeModelSettings = {"claude_code_compaction": compaction}
    model = ClaudeCodeModel(env=claude_backend.cli_env(), keep_sessions=0, settings=settings)

    error = await run_error(model, ClaudeCodeContextWindowExceededError)
    assert_prompt_too_long(error, compaction=compaction)


async def test_not_logged_in_is_an_authentication_error_naming_the_login_command(claude_backend: OfflineBackend):
    env = {name: value for name, value in claude_backend.cli_env().items() if name != "ANTHROPIC_API_KEY"}
    model = ClaudeCodeModel(env=env, keep_sessions=0)

    with pytest.raises(ClaudeCodeAuthenticationError) as raised:
        await Agent(model).run("hello")

    assert isinstance(raised.value, ModelAuthenticationError)
    assert "Not logged in" in str(raised.value)
    assert "claudecode-model login" in str(raised.value)
    assert claude_backend.requests == []  # the CLI knew before asking the API


@pytest.fixture
def fake_cli(tmp_path: Path):
    def make(name: str, script: str, *, executable: bool = True) -> Path:
        path = tmp_path / name
        path.write_text(script)
        path.chmod(0o755 if executable else 0o644)
        return path

    return make


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # its pipes are closed, not left to GC
async def test_a_cli_that_dies_at_start_is_a_process_error_with_its_stderr(fake_cli):
    cli = fake_cli("claude", '#!/bin/sh\nread line\necho "boom: no config" >&2\nexit 3\n')
    model = ClaudeCodeModel(cli_path=cli, keep_sessions=0)

    with pytest.raises(CLIProcessError) as raised:
        await Agent(model).run("hello")

    assert raised.value.exit_code == 3
    assert "boom: no config" in str(raised.value)


async def test_unreadable_cli_output_is_a_response_parse_error(fake_cli):
    cli = fake_cli(
        "claude", '#!/bin/sh\nread line\necho "{not json"\nexec sleep 10\n'
    )  # one process: killed, its pipes close
    model = ClaudeCodeModel(cli_path=cli, keep_sessions=0, settings={"claude_code_timeout": 30})

    with pytest.raises(CLIResponseParseError, match="could not be read"):
        await Agent(model).run("hello")


def test_the_sdk_transport_and_parse_errors_become_ours():
    connection = map_sdk_error(SDKCLIConnectionError("Failed to start Claude Code: denied"), "a stderr line")
    parse = map_sdk_error(SDKCLIJSONDecodeError("{oops", ValueError("bad")), "")

    assert isinstance(connection, CLIConnectionError)
    assert "denied" in str(connection)
    assert connection.stderr == "a stderr line"
    assert isinstance(parse, CLIResponseParseError)
    assert map_sdk_error(ValueError("other"), "") is None


async def test_a_cli_path_that_is_not_executable_says_so(fake_cli):
    cli = fake_cli("claude", "#!/bin/sh\nexit 0\n", executable=False)
    model = ClaudeCodeModel(cli_path=cli)

    with pytest.raises(CLINotFoundError, match="exists but is not executable"):
        await Agent(model).run("hello")
