"""Importing the model is light: claude-agent-sdk and mcp load with the first request, not with the import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claudecode_model import DEFAULT_SERVER_NAME

# The model module's own name (not in its __all__): the test checks it is the package's.
from claudecode_model.model import DEFAULT_SERVER_NAME as MODEL_DEFAULT_SERVER_NAME  # type: ignore[attr-defined]

SRC_DIR = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("claude_agent_sdk", "mcp")


def loaded_after(code: str, env: dict[str, str] | None = None) -> list[str]:
    report = f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    probe = f"{code}\nimport json, sys\n{report}\n"
    completed = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC_DIR), **(env or {})},
        timeout=120,
        check=True,
    )
    names: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return names


def test_importing_and_creating_the_model_imports_neither_the_sdk_nor_mcp():
    code = (
        "from pydantic_ai import Agent\n"
        "from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings, ClaudeCodeError\n"
        "model = ClaudeCodeModel('sonnet', settings={'claude_code_timeout': 30})\n"
        "agent = Agent(model, instructions='Be brief.')\n"
    )
    assert loaded_after(code) == []


@pytest.mark.cli
def test_the_first_request_imports_them(claude_backend):
    code = (
        "from pydantic_ai import Agent\n"
        "from claudecode_model import ClaudeCodeModel\n"
        "model = ClaudeCodeModel()\n"
        "assert Agent(model).run_sync('hello').output\n"
    )
    assert loaded_after(code, claude_backend.cli_env()) == sorted(HEAVY)


def test_the_model_module_names_the_same_default_server():
    assert MODEL_DEFAULT_SERVER_NAME == DEFAULT_SERVER_NAME


@pytest.mark.cli
def test_a_first_request_with_a_tool_loads_neither_registered_toolsets_nor_the_ipc_session(claude_backend):
    claude_backend.set_brain("done")
    code = (
        "from pydantic_ai import Agent\n"
        "from claudecode_model import ClaudeCodeModel\n"
        "agent = Agent(ClaudeCodeModel())\n"
        "@agent.tool_plain\n"
        "def probe(n: int) -> str:\n"
        "    return str(n)\n"
        "assert agent.run_sync('hello').output == 'done'\n"
        "import json, sys\n"
        "unused = ['claudecode_model.mcp_integration', 'claudecode_model.tool_converter',\n"
        "          'claudecode_model.deps_support', 'claudecode_model.ipc._session', 'dacite']\n"
        "print(json.dumps([name for name in unused if name in sys.modules]))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC_DIR), **claude_backend.cli_env()},
        timeout=120,
        check=True,
    )

    assert json.loads(completed.stdout.strip().splitlines()[-1]) == []
