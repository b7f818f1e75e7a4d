"""Parked spares (CLIs started with ``--await-claim``): which sessions share a launch, when a model parks its spare,
what a claim sends, and a refused claim's fallback; on the in-memory CLI (the real CLI's part is in
``test_parked_spares_cli.py``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pydantic_ai import Agent

from claudecode_model import ClaudeCodeModel
from claudecode_model._history.cut_results import RESULT_READER_SERVER
from claudecode_model._sessions.claim import PARK_ARGUMENT, ClaimRefusedError, SessionClaim, parked_options
from claudecode_model._sessions.options import RequestNeeds, build_options, launch_signature
from claudecode_model._sessions.session import CLISession
from claudecode_model._sessions.transport import CLITransport
from claudecode_model._turns.runner import LaunchMemory
from claudecode_model.testing import ScriptedCLI
from tests._support.cli_script import calling
from tests._support.polling import wait_for
from tests._support.responses import source_of

_CLI = Path("/bin/true")


def _launch(settings: dict[str, Any], *, model: str | None = "m", tools: list[Any] | None = None) -> str | None:
    needs = RequestNeeds(system_prompt="sys", mcp_tools_signature=tools)
    options, _ = build_options(
        model_name=model,
        cli_path=_CLI,
        settings=settings,  # type: ignore[arg-type]
        needs=needs,
        base_env={},
        stderr=lambda line: None,
    )
    return launch_signature(options, settings, needs, _CLI)  # type: ignore[arg-type]


def _server(transport: str, *tools: str) -> list[Any]:
    return ["run", "pydantic_tools", transport, list(tools), None]


def test_sessions_that_differ_in_what_a_claim_sets_share_a_launch() -> None:
    plain = _launch({}, tools=[_server("sdk", "a")])

    assert plain is not None
    assert _launch({}, model="other", tools=[_server("sdk", "a")]) == plain
    assert _launch({}, tools=[_server("sdk", "b", "c")]) == plain  # the claim connects the server's tools by name
    assert _launch({"claude_code_permission_mode": "plan"}, tools=[_server("sdk", "a")]) == plain
    assert _launch({"claude_code_max_turns": 2}, tools=[_server("sdk", "a")]) != plain
    assert _launch({}) == plain  # no tool server: its allow rules and servers are the claim's


def test_no_parked_cli_serves_what_its_launch_would_fix_elsewhere() -> None:
    assert _launch({}, tools=[_server("stdio", "a")]) is None  # the CLI starts the bridge at launch
    assert _launch({"claude_code_setting_sources": ["project"]}) is None  # read in the launch directory
    assert _launch({"claude_code_extra_args": {"verbose": None}}) is None


def test_a_launch_signature_is_varied_once_it_has_served_two_signatures() -> None:
    memory = LaunchMemory()

    assert not memory.note("L", "a")
    assert not memory.note("L", "a")
    assert memory.note("L", "b")
    assert memory.note("L", "a")
    for index in range(LaunchMemory.SIZE):
        memory.note(f"other {index}", "x")
    assert not memory.note("L", "a")  # forgotten: the oldest make room


def test_a_claim_carries_what_the_options_set_and_parking_adds_the_flag() -> None:
    instance = object()
    options = ClaudeAgentOptions(
        cwd="/somewhere",
        system_prompt={"type": "custom", "prompt": "Be brief."},
        permission_mode="default",
        model="m",
        mcp_servers={"tools": {"type": "sdk", "name": "tools", "instance": instance}},  # type: ignore[typeddict-item]
        allowed_tools=["Read", "mcp__tools"],
    )

    claim = SessionClaim.of(options, allowed=["mcp__tools"])

    assert claim.request() == {
        "subtype": "claim_session",
        "cwd": "/somewhere",
        "system_prompt": ["Be brief."],
        "sdk_mcp_servers": ["tools"],
        "permission_mode": "default",
    }
    assert claim.sdk_servers == {"tools": instance}
    assert claim.allow_request() == {
        "subtype": "apply_flag_settings",
        "settings": {"permissions": {"allow": ["mcp__tools"]}},
    }
    assert SessionClaim.of(options).allow_request() is None
    parked = parked_options(options, claimed_rules=["mcp__tools"])
    assert parked.mcp_servers == options.mcp_servers
    assert parked.extra_args == {PARK_ARGUMENT: None}
    assert parked.allowed_tools == ["Read"]  # the claim allows the server's tools
    assert parked.env == {"ENABLE_TOOL_SEARCH": "false"}  # as wherever tools are served
    with pytest.raises(ValueError, match="custom system prompt"):
        SessionClaim.of(ClaudeAgentOptions(system_prompt={"type": "preset", "preset": "claude_code"}))


@dataclass
class _RecordingCLI(ScriptedCLI):
    transports: list[CLITransport] = field(default_factory=list)

    def open(self, options: ClaudeAgentOptions) -> CLITransport:
        transport = super().open(options)
        self.transports.append(transport)
        return transport


@pytest.fixture
def cli() -> _RecordingCLI:
    return _RecordingCLI(lambda message: [calling("probe"), lambda results: f"tool said {results[-1]}"])


@pytest.fixture
async def model(cli: ScriptedCLI) -> AsyncIterator[ClaudeCodeModel]:
    # Room for the kept sessions of two agents and a spare: a spare is the first to leave a full budget.
    model = ClaudeCodeModel(cli_transports=cli, spare_sessions=1, keep_sessions=3)
    yield model
    await model.aclose()


def _agent(model: ClaudeCodeModel, instructions: str, answer: str) -> Agent[None, str]:
    agent = Agent(model, instructions=instructions)

    @agent.tool_plain
    def probe() -> str:
        """Report."""
        return answer

    return agent


def _claims(cli: ScriptedCLI) -> list[dict[str, Any]]:
    return [request for request in cli.controls if request["subtype"] == "claim_session"]


def _servers(options: ClaudeAgentOptions) -> list[str]:
    assert isinstance(options.mcp_servers, dict)
    return list(options.mcp_servers)


def _parked(cli: ScriptedCLI) -> list[ClaudeAgentOptions]:
    return [options for options in cli.opened if PARK_ARGUMENT in options.extra_args]


async def test_a_model_parks_its_spare_once_two_agents_share_a_launch_and_a_third_claims_it(
    model: ClaudeCodeModel, cli: ScriptedCLI
) -> None:
    first = await _agent(model, "Be brief.", "one").run("x")
    assert source_of(first) == "fresh"
    assert await wait_for(lambda: cli.live == 2)  # a ready spare of the first agent's signature
    assert not _parked(cli)
    assert source_of(await _agent(model, "Be verbose.", "two").run("x")) == "fresh"
    assert await wait_for(lambda: len(_parked(cli)) == 1)  # two signatures, one launch: the next spare parks

    third = await _agent(model, "Be exact.", "three").run("x")

    assert source_of(third) == "spare"
    assert third.output == "tool said three"  # the claim connected the third agent's own tool server
    [claim] = _claims(cli)
    assert "apply_flag_settings" not in [request["subtype"] for request in cli.controls]  # allowed at the launch
    assert claim["system_prompt"] == ["Be exact."]
    assert claim["sdk_mcp_servers"] == sorted(_servers(cli.opened[0]))  # those a new process of it is given
    assert claim["cwd"] == str(Path.cwd())
    assert not any(request["subtype"] == "set_model" for request in cli.controls)  # the model's own model
    # Parked with the cut-result reader alone (the same for every session of its launch); the claim keeps it.
    assert set(_servers(_parked(cli)[0])) == {RESULT_READER_SERVER}
    follow_up = await _agent(model, "Be exact.", "three").run("y", message_history=third.all_messages())
    assert source_of(follow_up) == "live"  # the claimed session is kept with the third agent's signature


async def test_a_parked_cli_is_launched_with_the_server_rules_of_its_launchs_agents(
    model: ClaudeCodeModel, cli: ScriptedCLI
) -> None:
    await _agent(model, "Be brief.", "one").run("x")
    await Agent(model, instructions="Be verbose.").run("x")  # a text agent: same launch, and it starts the spare
    assert await wait_for(lambda: len(_parked(cli)) == 1)

    third = await _agent(model, "Be exact.", "three").run("x")

    assert source_of(third) == "spare"
    assert third.output == "tool said three"
    server_rules = [rule for rule in cli.opened[0].allowed_tools if rule.startswith("mcp__")]
    assert server_rules
    assert set(server_rules) <= set(_parked(cli)[0].allowed_tools)  # the tool agent's, though a text agent parked it
    assert "apply_flag_settings" not in [request["subtype"] for request in cli.controls]


async def test_a_claim_allows_the_server_tools_a_launch_without_tools_did_not(
    model: ClaudeCodeModel, cli: ScriptedCLI
) -> None:
    await Agent(model, instructions="Be brief.").run("x")
    await Agent(model, instructions="Be verbose.").run("x")  # two text agents: one launch, no server rules
    assert await wait_for(lambda: len(_parked(cli)) == 1)

    third = await _agent(model, "Be exact.", "three").run("x")

    assert source_of(third) == "spare"
    assert third.output == "tool said three"
    subtypes = [request["subtype"] for request in cli.controls]
    allow = cli.controls[subtypes.index("claim_session") - 1]  # just ahead of the claim
    assert allow["subtype"] == "apply_flag_settings"
    rules = allow["settings"]["permissions"]["allow"]
    assert any(rule.startswith("mcp__pydantic_tools") for rule in rules)
    assert not set(rules) & set(_parked(cli)[0].allowed_tools)


async def test_a_refused_claim_stops_the_parked_cli_and_starts_the_session_anew(
    model: ClaudeCodeModel, cli: _RecordingCLI, caplog: pytest.LogCaptureFixture
) -> None:
    await _agent(model, "Be brief.", "one").run("x")
    await _agent(model, "Be verbose.", "two").run("x")
    assert await wait_for(lambda: len(_parked(cli)) == 1)
    cli.refuse_claims = "busy"
    [parked] = [
        transport for options, transport in zip(cli.opened, cli.transports, strict=True) if options in _parked(cli)
    ]
    opened_before = len(cli.opened)

    with caplog.at_level(logging.DEBUG, logger="claudecode_model._turns.acquire"):
        third = await _agent(model, "Be exact.", "three").run("x")

    assert source_of(third) == "fresh"
    assert third.output == "tool said three"
    assert len(_claims(cli)) == 1
    assert "a parked CLI refused the claim (busy)" in caplog.text
    assert parked.ended  # stopped before the run went on
    assert not cli.opened[opened_before].extra_args  # the session's own process, started as without a spare


async def test_a_claim_sets_the_model_when_it_differs_from_the_launch(cli: ScriptedCLI) -> None:
    options = ClaudeAgentOptions(model="launched", system_prompt="", extra_args={PARK_ARGUMENT: None})
    session = CLISession(options, signature="launch", transports=cli)
    await session.start()
    try:
        claim = SessionClaim(cwd=".", system_prompt="s", permission_mode=None, model="claimed", sdk_servers={})
        await session.claim(claim, signature="claimed")

        assert session.signature == "claimed"
        assert [request["subtype"] for request in cli.controls][-2:] == ["claim_session", "set_model"]
        assert cli.controls[-1]["model"] == "claimed"
        with pytest.raises(ClaimRefusedError, match="not_a_spare"):
            await session.claim(claim, signature="again")  # a claimed CLI is no spare any more
    finally:
        await session.close()


async def test_a_brand_new_model_claims_the_cli_another_model_parked_when_their_launch_is_the_same(
    model: ClaudeCodeModel, cli: ScriptedCLI
) -> None:
    await _agent(model, "Be brief.", "one").run("x")
    await _agent(model, "Be verbose.", "two").run("x")
    assert await wait_for(lambda: len(_parked(cli)) == 1)
    other_env = ClaudeCodeModel(cli_transports=cli, env={"SOME_SETTING": "1"})
    brand_new = ClaudeCodeModel(cli_transports=cli)
    try:
        assert source_of(await _agent(other_env, "Be exact.", "x").run("x")) == "fresh"  # launched otherwise
        opened = len(cli.opened)

        result = await _agent(brand_new, "Be exact.", "three").run("x")

        assert source_of(result) == "spare"
        assert result.output == "tool said three"
        assert len(cli.opened) == opened  # no CLI started for it
        follow_up = await _agent(brand_new, "Be exact.", "three").run("y", message_history=result.all_messages())
        assert source_of(follow_up) == "live"  # kept by the model that claimed it
    finally:
        await other_env.aclose()
        await brand_new.aclose()
