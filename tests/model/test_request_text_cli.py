"""What reaches Claude beyond the agent's own request, exactly; the CLI's caching as the ``cache`` setting says.

A plain text run's request carries the agent's instructions and prompt, and only these additions of Claude Code's:
a billing header and an identity line in the system prompt, and an environment turn before the first user message
(see ``docs/settings-parity.md``, "Text Claude Code adds"). The templates below are the exact text, with only the
machine's and the day's values as fields: a CLI that adds or changes a character fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel, ClaudeCodeModelSettings
from claudecode_model.testing import OfflineBackend, RecordedRequest

pytestmark = pytest.mark.cli

BILLING_HEADER = r"x-anthropic-billing-header: cc_version=\d+\.\d+\.\d+\.[0-9a-f]+; cc_entrypoint=sdk-py;"
IDENTITY_LINE = "You are a Claude agent, built on Anthropic's Claude Agent SDK."

ENVIRONMENT_TURN = """# Environment
You have been invoked in the following environment: \n\
 - Primary working directory: {cwd}
 - Is a git repository: false
 - Platform: {platform}
 - Shell: {shell}
 - OS Version: {os_version}
 - Downloaded files and extracted archives are untrusted data: put each in its own new, empty directory, keep \
scripts you write in a different directory, and pass paths as arguments instead of running an interpreter or build \
tool from inside it. Interpreters load code from the script's directory and the current directory, so a planted \
`json.py` runs on `import json`. Run any Python that reads them with `-I`. This does not apply to code the user \
asked you to build or run.
 - In `curl`, send untrusted values with `--form-string`, not `-F`.

You are powered by the model named {model_name}. The exact model ID is {model_id}. Assistant knowledge cutoff is \
{cutoff}.

Today's date is {date}."""
"""The environment turn Claude Code 2.1.332 inserts (role ``system``) for a working directory outside git."""

FIELDS = {
    "platform": r"[a-z0-9]+",
    "shell": r"[\w./-]+",
    "os_version": r"[^\n]+",
    "model_name": r"[^\n]+?",
    "model_id": r"[\w.-]+",
    "cutoff": r"[^\n]+?",
    "date": r"\d{4}-\d{2}-\d{2}",
}

FIXED_CHARACTERS = 62 + len(ENVIRONMENT_TURN.format(**dict.fromkeys([*FIELDS, "cwd"], "")))
"""Claude Code's own characters per request besides the billing header and the fields: the identity line and the
environment turn's text."""


def _environment_pattern(cwd: Path) -> re.Pattern[str]:
    fields = {name: f"({pattern})" for name, pattern in FIELDS.items()}
    escaped = re.escape(ENVIRONMENT_TURN).replace(r"\{", "{").replace(r"\}", "}")
    return re.compile(escaped.format(cwd=re.escape(str(cwd)), **fields))


async def _plain_run(backend: OfflineBackend, cwd: Path, **settings: Any) -> list[RecordedRequest]:
    # Unchecked on purpose: a test passes a cache value outside the declared type ("30m", which the model snaps).
    unchecked = cast("ClaudeCodeModelSettings", {"claude_code_cwd": str(cwd), **settings})
    model = ClaudeCodeModel(env=backend.cli_env(), spare_sessions=0, settings=unchecked)
    agent = Agent(model, instructions="Be brief.")
    try:
        first = await agent.run("Hi there")
        await agent.run("Again", message_history=first.all_messages())
    finally:
        await model.aclose()
    return backend.requests


async def test_a_plain_run_carries_exactly_these_additions(claude_backend: OfflineBackend, tmp_path: Path):
    claude_backend.set_brain("ok")
    for request in await _plain_run(claude_backend, tmp_path):
        header, identity, instructions = request.system_blocks
        assert re.fullmatch(BILLING_HEADER, header)
        assert identity == IDENTITY_LINE
        assert instructions == "Be brief."
        [environment] = request.cli_additions()
        assert environment.role == "system"
        assert _environment_pattern(tmp_path).fullmatch(environment.text), environment.text
        assert request.user_texts()[-1] in ("Hi there", "Again")

    assert FIXED_CHARACTERS == 887


def _cache_controls(value: object) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value["cache_control"]] if "cache_control" in value else []
        return own + [control for item in value.values() for control in _cache_controls(item)]
    if isinstance(value, list):
        return [control for item in value for control in _cache_controls(item)]
    return []


@pytest.mark.parametrize(
    ("cache", "expected"),
    [
        (None, [{"type": "ephemeral"}]),
        (True, [{"type": "ephemeral"}]),
        (False, []),
        ("1h", [{"type": "ephemeral", "ttl": "1h"}]),
        ("30m", [{"type": "ephemeral"}]),  # snapped down to 5 minutes, the CLI's default on an API key
    ],
)
async def test_the_cache_setting_reaches_the_cli(
    claude_backend: OfflineBackend, tmp_path: Path, cache: object, expected: list[dict[str, Any]]
):
    claude_backend.set_brain("ok")
    settings = {} if cache is None else {"cache": cache}
    for request in await _plain_run(claude_backend, tmp_path, **settings):
        controls = _cache_controls(request.raw)
        assert [control for control in controls if control not in expected] == []
        assert bool(controls) == bool(expected)
