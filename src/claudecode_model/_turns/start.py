"""Starting a request's turn (:func:`start_turn`) and a spare for requests like it (:func:`prewarm_turn`), from
one preparation.
"""

from __future__ import annotations

import asyncio
import os
from collections import ChainMap, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from claudecode_model._compat import current_run_context, new_parts_manager, request_instructions
from claudecode_model._history.details import PROVIDER_NAME
from claudecode_model._history.plan import TurnPlan, plan_turn
from claudecode_model._history.to_anthropic import ContentBlock
from claudecode_model._history.transcripts import TranscriptFiles
from claudecode_model._sessions.inactivity import inactivity_timeout
from claudecode_model._sessions.options import effective_system_prompt, require_literal_prompts
from claudecode_model._stream.translator import TurnTranslator
from claudecode_model._tools.agent_executed import PendingCalls, deliver_answers, pending_calls, resumed_calls
from claudecode_model._tools.builtin_approvals import (
    ApprovalPlan,
    approval_tool_names,
    check_permission_mode_for_taken_up_call,
)
from claudecode_model._tools.execution import DEFAULT_PERMISSION_MODE, checked_tool_execution
from claudecode_model._tools.request import ToolNames, plan_tool_servers, tool_names
from claudecode_model._tools.restrictions import forbidden_argument
from claudecode_model._tools.router import RunToolRouter
from claudecode_model._turns.acquire import SlotWait, acquire_session, session_request, start_spare
from claudecode_model._turns.error_map import ErrorMap, mapping_errors
from claudecode_model._turns.runner import SessionRequest, TurnRunner
from claudecode_model._turns.turn import CLITurn, SessionLease, TurnClock
from claudecode_model.exceptions import ClaudeCodeError, ClaudeCodeSettingsError, CLITimeoutError
from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = ["prewarm_turn", "start_turn"]


@dataclass(frozen=True)
class _Prepared:
    """What a request's turn, or a spare for requests like it, is started from."""

    settings: ClaudeCodeModelSettings
    plan: TurnPlan
    names: ToolNames
    approvals: ApprovalPlan
    request: SessionRequest
    stderr: deque[str]
    pending: PendingCalls | None
    """Calls of the history's last response that pydantic-ai ran, taken up in a new session."""
    calls_wait_for_pydantic_ai: bool
    needs_run_context: bool


async def _prepare(
    runner: TurnRunner,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    params: ModelRequestParameters,
    *,
    keep: bool,
    take_up_pending: bool = True,
) -> _Prepared:
    """Prune the pool, plan the tool servers and the turn (the one place a turn's plan is made), and build the CLI
    options and session signature."""
    settings = cast("ClaudeCodeModelSettings", model_settings or {})
    await runner.pool.prune()
    execution = settings.get("claude_code_tool_execution")
    servers = plan_tool_servers(
        runner.tools, params, runner.cli_path, checked_tool_execution(execution) if execution is not None else None
    )
    approvals = _approval_plan(settings, params, execution or runner.tools.execution)
    waits = any(server.calls_wait_for_pydantic_ai for server in servers) or bool(approvals.tools)
    pending = pending_calls(messages, PROVIDER_NAME) if waits and take_up_pending else None
    plan = plan_turn(
        messages,
        request_instructions(messages, params),
        allow_continue=keep,
        resumed=resumed_calls(messages, pending) if pending is not None else None,
    )
    if plan.deferred_call is not None and not str(plan.deferred_call.get("name", "")).startswith("mcp__"):
        check_permission_mode_for_taken_up_call(settings.get("claude_code_permission_mode", DEFAULT_PERMISSION_MODE))
    request, stderr = session_request(runner, settings, params, plan.system_prompt, servers, approvals)
    return _Prepared(
        settings=settings,
        plan=plan,
        names=tool_names(servers),
        approvals=approvals,
        request=request,
        stderr=stderr,
        pending=pending,
        calls_wait_for_pydantic_ai=waits,
        needs_run_context=any(server.needs_run_context for server in servers),
    )


async def start_turn(
    runner: TurnRunner,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    params: ModelRequestParameters,
    run_context: RunContext[Any] | None = None,
    *,
    requested_at: float | None = None,
) -> CLITurn:
    """Plan the request, acquire its session and return the turn, ready to stream.

    ``model_settings`` and ``params`` are those ``Model.prepare_request`` returned; ``requested_at`` (loop time) is
    when the model got the request, by default now.
    """
    clock = TurnClock(timeout=None)  # started now
    settings = cast("ClaudeCodeModelSettings", model_settings or {})
    clock.timeout, clock.inactivity_timeout = _turn_timeout(settings), inactivity_timeout(settings)
    # The timeout covers the whole request: the first request's imports, planning, the CLI's start and
    # initialisation, and the turn itself.
    if requested_at is None:
        requested_at = asyncio.get_running_loop().time()
    clock.deadline = None if clock.timeout is None else requested_at + clock.timeout
    keep = settings.get("claude_code_session", "auto") == "auto"
    prepared = await _prepare(runner, messages, settings, params, keep=keep)
    if prepared.needs_run_context:
        run_context = run_context or current_run_context()
        if run_context is None:
            raise ClaudeCodeError(
                "This request carries function tools but no agent run context: run the model through an "
                "Agent, or register the tools with set_agent_toolsets()."
            )
    # Layered, not merged: the process environment is copied only if a transcript path is needed (not for a turn
    # that continues a live session).
    env = ChainMap(dict(settings.get("claude_code_env", {})), dict(runner.env), os.environ)
    files = TranscriptFiles(env=env, cwd=settings.get("claude_code_cwd"))
    bound = run_context if prepared.needs_run_context else None
    lease, new_input = await _lease(runner, prepared, files, clock, keep, messages, bound)
    if prepared.pending is not None:
        deliver_answers(lease.router.results, prepared.pending)
    return CLITurn(
        runner=runner,
        lease=lease,
        clock=clock,
        plan=prepared.plan,
        messages_in=messages,
        params=params,
        stderr=lease.session.stderr if lease.session.stderr is not None else prepared.stderr,
        translator=_translator(prepared, lease.router, params),
        wants_structured_output=prepared.request.needs.output_schema is not None,
        calls_wait_for_pydantic_ai=prepared.calls_wait_for_pydantic_ai,
        new_input=new_input,
        system_prompt=effective_system_prompt(settings, prepared.plan.system_prompt),
    )


async def _lease(
    runner: TurnRunner,
    prepared: _Prepared,
    files: TranscriptFiles,
    clock: TurnClock,
    keep: bool,
    messages: list[ModelMessage],
    run_context: RunContext[Any] | None,
) -> tuple[SessionLease, list[ContentBlock]]:
    """The turn's session, acquired within the request's time and ready (see :func:`_ready`), and the user message
    that starts the turn in it."""
    starting = asyncio.timeout_at(clock.deadline)
    slot_wait = SlotWait()

    def slot_error() -> CLITimeoutError | None:
        slots = runner.slots
        return slot_wait.error(slots.limit) if slot_wait.since is not None and slots is not None else None

    errors = ErrorMap(runner.display_name, prepared.stderr, clock.timeout, deadline=starting, slot_error=slot_error)
    with mapping_errors(errors, only_time=True):
        async with starting:
            await require_literal_prompts(runner.cli_path, prepared.settings)
            acquired = await acquire_session(
                prepared.request, prepared.plan, files, errors, keep=keep, slot_wait=slot_wait
            )
    router = acquired.session.tool_router
    assert router is not None, "every session of the turn runner has a tool router"
    lease = SessionLease(
        acquired.session,
        router,
        files,
        acquired.source,
        keep,
        acquired.release_source,
        acquired.store_fault,
        # claude_code_session="new" asks for no process to outlive the turn: no spare either. Nor does a conversation
        # a kept CLI served, rewound: the kept CLIs serve the next ones too.
        prepared.request if keep and acquired.source in ("fresh", "spare") else None,
    )
    await _ready(lease, messages, run_context, replace(errors, deadline=asyncio.timeout_at(clock.deadline)))
    return lease, acquired.new_input


async def _ready(
    lease: SessionLease, messages: list[ModelMessage], run_context: RunContext[Any] | None, errors: ErrorMap
) -> None:
    """Bind the session's tool router to the run, and make the history's results that Claude Code gets cut
    readable whole in this session too (resumed, forked); a failure stops the session, which nothing owns yet."""
    router = lease.router
    router.bind(run_context)
    assert errors.deadline is not None
    try:
        with mapping_errors(errors, only_time=True):
            async with errors.deadline:
                await router.reader.keep_history(messages)
                await router.reader.announce()
    except BaseException:
        lease.release_source()
        await lease.session.abort()
        raise


def _translator(prepared: _Prepared, router: RunToolRouter, params: ModelRequestParameters) -> TurnTranslator:
    """The translator of the turn's SDK messages."""
    approvals, gate = prepared.approvals, router.builtin_gate
    translator = TurnTranslator(
        new_parts_manager(params),
        tool_prefixes=prepared.names.prefixes,
        output_tool_names=prepared.names.plain_calls | frozenset(approvals.tools),
        native_tools=prepared.request.needs.native_tools,
        denied=gate.settled if gate is not None and approvals.tools else _restriction_check(prepared.settings),
        builtin_approvals=frozenset(approvals.tools),
        whole_results=router.whole_results,
    )
    deferred = prepared.plan.deferred_call
    if deferred is not None:
        translator.resumes_call(str(deferred["id"]), str(deferred["name"]))
    return translator


async def prewarm_turn(
    runner: TurnRunner,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> bool:
    """Start a spare for the session a request like this one would start, and wait until it is ready.

    Whether a spare is ready for it now (started here, or already there).
    """
    prepared = await _prepare(runner, messages, model_settings, params, keep=False, take_up_pending=False)
    await require_literal_prompts(runner.cli_path, prepared.settings)
    start_spare(prepared.request, parked=False)
    return await runner.pool.wait_spare(prepared.request.signature)


def _approval_plan(settings: ClaudeCodeModelSettings, params: ModelRequestParameters, execution: str) -> ApprovalPlan:
    """The approvals of the request's built-in calls: the tools of its ``BuiltinToolApprovals`` and its policy."""
    tools = approval_tool_names(params.function_tools)
    if tools and execution == "cli":
        raise ClaudeCodeSettingsError(
            f"Built-in tool approvals ({', '.join(tools)}) need tool_execution='agent': with 'cli' no request "
            "returns to pydantic-ai while Claude Code works, so nothing could ask for the approval."
        )
    policy = settings.get("claude_code_builtin_tool_policy")
    restrictions = settings.get("claude_code_tool_parameter_restrictions") if tools or policy else None
    return ApprovalPlan(tools, policy, restrictions)


def _restriction_check(settings: ClaudeCodeModelSettings) -> Callable[[str, dict[str, Any], str], bool] | None:
    """Whether the CLI's restriction hook will deny a call (so pydantic-ai must not run it)."""
    restrictions = settings.get("claude_code_tool_parameter_restrictions")
    if not restrictions:
        return None
    return lambda cli_name, arguments, call_id: forbidden_argument(restrictions, cli_name, arguments) is not None


def _turn_timeout(settings: ClaudeCodeModelSettings) -> float | None:
    explicit = settings.get("claude_code_timeout")
    if explicit is not None:
        return float(explicit)
    standard = settings.get("timeout")
    return float(standard) if isinstance(standard, int | float) else None
