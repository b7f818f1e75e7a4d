"""Programs end silently: no asyncio warnings on stderr, no CLI process outliving the interpreter, no temp dirs left."""

from __future__ import annotations

import re
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from claudecode_model._sessions.session import _STOP_GRACE_SECONDS
from claudecode_model.testing import OfflineBackend
from tests._support.processes import environment, process_table
from tests._support.subprocesses import run_python

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("Task was destroyed", "ignored GeneratorExit", "never awaited", "Event loop is closed", "Exception ignored")


def readme_quickstart() -> str:
    """The Python block of the README's quickstart, as a user would paste it."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the program and everything it started)."""
    return [process.pid for process in process_table() if process.alive and marker.encode() in environment(process.pid)]


def run_program(code: str, env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    marker = f"CLAUDECODE_MODEL_EXIT_TEST={uuid.uuid4().hex}"
    name, value = marker.split("=", 1)
    script = tmp_path / "program.py"
    script.write_text(code)
    completed = run_python(str(script), cwd=tmp_path, env={**env, name: value}, timeout=120)
    return completed, marker


def test_the_readme_quickstart_exits_silently(claude_backend: OfflineBackend, tmp_path: Path):
    completed, marker = run_program(readme_quickstart(), claude_backend.cli_env(), tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert "RunUsage(" in completed.stdout  # result.usage is a property
    assert len(claude_backend.requests) == 2  # both runs reached the backend through the CLI
    assert processes_with(marker) == []


def test_a_forgotten_backend_stop_and_model_close_leave_nothing(tmp_path: Path):
    program = textwrap.dedent(
        """
        import os
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel
        from claudecode_model.testing import OfflineBackend

        backend = OfflineBackend("Paris.")
        backend.start()
        print(backend.config_dir, backend.tmp_dir)
        agent = Agent(ClaudeCodeModel(env=backend.cli_env()))
        result = agent.run_sync("What is the capital of France?")
        agent.run_sync("And of Italy?", message_history=result.all_messages())
        """
    )
    work = tmp_path / "tmp"
    work.mkdir()
    completed, marker = run_program(program, {"TMPDIR": str(work)}, tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    config_dir, tmp_dir = completed.stdout.split()
    assert not Path(config_dir).exists()
    assert not Path(tmp_dir).exists()
    assert processes_with(marker) == []


def test_close_stops_the_cli_at_once(claude_backend: OfflineBackend, tmp_path: Path):
    program = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel

        def children():
            me = str(os.getpid())
            return [
                p.name for p in Path("/proc").iterdir()
                if p.name.isdigit() and (p / "stat").exists()
                and (p / "stat").read_text().rsplit(")", 1)[1].split()[:2][1] == me
                and (p / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ]

        model = ClaudeCodeModel(spare_sessions=0)  # counts the one CLI of the conversation
        Agent(model).run_sync("hello")
        print("before", len(children()))
        model.close()
        print("after", len(children()))
        model.close()  # twice is fine
        """
    )
    completed, marker = run_program(program, claude_backend.cli_env(), tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["before", "1", "after", "0"]
    assert completed.stderr == ""
    assert processes_with(marker) == []


CHILDREN = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    def children():
        me = str(os.getpid())
        found = []
        for p in Path("/proc").iterdir():
            try:
                state, parent = (p / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue
            if parent == me and state != "Z":
                found.append(p.name)
        return found

    def children_after_stop():
        deadline = time.monotonic() + 10
        while children() and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(children())
    """
)


@pytest.mark.parametrize(
    "closing",
    [
        pytest.param("asyncio.run(model.aclose())", id="asyncio_run_aclose"),
        pytest.param("model.close()", id="close"),
        pytest.param("asyncio.run(close_in_a_coroutine())", id="close_inside_a_running_loop"),
        pytest.param("threading.Thread(target=model.close).start()", id="close_from_another_thread"),
    ],
)
def test_closing_after_run_sync_is_quiet_from_any_context(claude_backend: OfflineBackend, tmp_path: Path, closing: str):
    program = CHILDREN + textwrap.dedent(
        f"""
        import asyncio, threading
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel

        model = ClaudeCodeModel()
        first = Agent(model).run_sync("hello")
        Agent(model).run_sync("again", message_history=first.all_messages())
        Agent(model, instructions="Another agent.").run_sync("another conversation")  # a CLI of its own

        async def close_in_a_coroutine():
            model.close()  # cannot block the loop: stops the CLIs now, tidies up in a task
            print("stopped", children_after_stop())

        print("before", len(children()))
        {closing}
        print("after", children_after_stop())
        """
    )
    completed, marker = run_program(program, claude_backend.cli_env(), tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert [line for line in completed.stdout.splitlines() if line.startswith("after")] == ["after 0"]
    assert int(completed.stdout.split("before ")[1].split()[0]) >= 2  # the two agents' kept CLIs
    assert processes_with(marker) == []


def test_closing_after_an_idle_pause_is_quiet_with_an_explicit_keep_sessions(
    claude_backend: OfflineBackend, tmp_path: Path
):
    # The second conversation puts the first one over keep_sessions=1: its close begins as run_sync returns and
    # stops with the loop. The pause outlasts that close's grace periods, which all expire at once when close()
    # runs the loop again (the disconnect's TimeoutError used to be "never retrieved", a 35-line traceback).
    pause = _STOP_GRACE_SECONDS * 2 + 2
    program = textwrap.dedent(
        f"""
        import time
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModel

        def add(a: int, b: int) -> int:
            return a + b

        model = ClaudeCodeModel(keep_sessions=1)
        agent = Agent(model, tools=[add])
        agent.run_sync("add 1 and 2")
        agent.run_sync("another conversation")
        time.sleep({pause})
        model.close()
        print("closed")
        """
    )
    completed, marker = run_program(program, claude_backend.cli_env(), tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert completed.stdout == "closed\n"
    assert processes_with(marker) == []


def test_claude_code_models_close_and_async_with_agent_stop_the_clis(claude_backend: OfflineBackend, tmp_path: Path):
    program = CHILDREN + textwrap.dedent(
        """
        import asyncio
        from pydantic_ai import Agent
        from claudecode_model import ClaudeCodeModels

        models = ClaudeCodeModels()
        agent = Agent("claude-code:sonnet", capabilities=[models])
        agent.run_sync("hello")
        print("kept", len(children()))
        models.close()
        print("after close", children_after_stop())

        async def main():
            async with agent:
                first = await agent.run("hello")
                await agent.run("again", message_history=first.all_messages())
                print("inside", len(children()))
            print("after async with", children_after_stop())

        asyncio.run(main())
        """
    )
    completed, marker = run_program(program, claude_backend.cli_env(), tmp_path)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    lines = completed.stdout.splitlines()
    assert "after close 0" in lines
    assert "after async with 0" in lines
    assert int(lines[0].split()[-1]) >= 1
    assert [line for line in lines if line.startswith("inside")] != ["inside 0"]
    assert processes_with(marker) == []


def readme_pytest_setup() -> tuple[str, str]:
    """The README's pytest configuration (TOML) and its async test using the fixtures."""
    section = (ROOT / "README.md").read_text().split("With pytest, the plugin", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    test = re.search(r"```python\n(.*?)```", section, re.S)
    assert toml is not None
    assert test is not None
    return toml.group(1), test.group(1)


def test_the_pytest_fixtures_end_quietly(tmp_path: Path):
    toml, readme_test = readme_pytest_setup()
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "test_user.py").write_text(
        readme_test
        + textwrap.dedent(
            """

            async def test_async_run_without_closing(claude_cli_env):
                model = ClaudeCodeModel(env=claude_cli_env)
                assert (await Agent(model).run("hello")).output

            def test_sync_run(claude_backend):
                model = ClaudeCodeModel(env=claude_backend.cli_env())
                assert Agent(model).run_sync("hello").output
            """
        )
    )
    completed = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py", cwd=tmp_path, timeout=180)
    output = completed.stdout + completed.stderr

    assert completed.returncode == 0, output
    assert "3 passed" in output
    assert not [noise for noise in NOISE if noise in output], output
    assert "warnings summary" not in output, output
