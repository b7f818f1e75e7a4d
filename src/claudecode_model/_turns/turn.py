"""The turn runner: one request's CLI turn, from planning to the session kept (or stopped) at its end.

:func:`start_turn` plans the request (continue a session or replay the history), plans the tool servers, builds the
CLI options once, and acquires a session: a live one from the pool, or a new CLI process given its options, tool
router and tool servers at construction. The :class:`CLITurn` it returns streams the SDK messages of the turn
(with the timeout and the error mapping applied), concludes it (usage, cost, finish reason, details, the digest
the session has now seen) and finishes it (the session back to the pool, or stopped).

The turn's state (session, translator, messages seen) lives here, apart from the ``StreamedResponse`` that shows
it to pydantic-ai, and :meth:`CLITurn.messages` can be left and entered again: the turn goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
import uuid
from collections import ChainMap, deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import AssistantMessage, McpServerConfig, Message, MirrorErrorMessage, StreamEvent
from pydantic_ai.messages import FinishReason, ModelMessage, ModelResponse, ModelResponsePart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RequestUsage

from claudecode_model._compat import (
    ModelResponsePartsManager,
    current_run_context,
    new_parts_manager,
    request_instructions,
)
from claudecode_model._history.details import (
    ABORTED_ATTEMPTS_KEY,
    FIRST_TOKEN_KEY,
    HISTORY_DIGEST_KEY,
    PROVIDER_NAME,
    RESUME_AT_KEY,
    SESSION_STORE_KEY,
)
from claudecode_model._history.ledger import PROCESS_LEDGER, SessionLedger
from claudecode_model._history.plan import SessionPoint, TurnPlan, plan_turn
from claudecode_model._history.replay import transcript_of, write_branch_with_deferred_call, write_replay_transcript
from claudecode_model._history.source import (
    ForkSession,
    FreshSession,
    LiveSession,
    ReplayHistory,
    ResumeSession,
    choose_source,
)
from claudecode_model._history.store import GuardedStore
from claudecode_model._history.stored_transcripts import (
    SessionCopy,
    find_transcript,
    mirror_transcript,
    recorded_entries_up_to,
    store_key,
)
from claudecode_model._history.to_anthropic import ContentBlock, user_content_blocks
from claudecode_model._history.transcripts import TranscriptFiles
from claudecode_model._process.prompt_file import with_prompt_file
from claudecode_model._process.slots import ProcessSlots
from claudecode_model._process.temp import private_cli_temp
from claudecode_model._sessions.options import (
    BuiltOptions,
    RequestNeeds,
    build_options,
    effective_system_prompt,
    require_literal_prompts,
)
from claudecode_model._sessions.session import CLISession, SessionPool, ToolsWaiting
from claudecode_model._sessions.trace_context import traceparent_env
from claudecode_model._stream.errors import map_error, result_error, timeout_error
from claudecode_model._stream.failures import classify_failed_turn
from claudecode_model._stream.pricing import list_price
from claudecode_model._stream.telemetry import SESSION_SOURCE_KEY, SessionSource, record_turn
from claudecode_model._stream.translator import TurnTranslator, delivery_unless_streaming
from claudecode_model._tools.agent_executed import PendingCalls, deliver_answers, pending_calls, resume_plan
from claudecode_model._tools.builtin_approvals import ApprovalPlan, BuiltinGate, approval_tool_names
from claudecode_model._tools.cli_executed import AGENT_TOOLS_SERVER, OUTPUT_TOOLS_SERVER, RunToolRouter
from claudecode_model._tools.execution import checked_tool_execution
from claudecode_model._tools.native import plan_native_tools
from claudecode_model._tools.parked_calls import ParkingLot
from claudecode_model._tools.request import (
    ToolServerPlan,
    ToolSetup,
    plan_tool_servers,
    serve_tool_servers,
    tool_names,
)
from claudecode_model._tools.restrictions import forbidden_argument
from claudecode_model.exceptions import (
    ClaudeCodeError,
    ClaudeCodeSettingsError,
    CLITimeoutError,
    StructuredOutputError,
)
from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = [
    "PARKED_SLOT_GRACE",
    "STDERR_LINES",
    "CLITurn",
    "NoSlotError",
    "SessionRequest",
    "TurnRunner",
    "TurnSummary",
    "prewarm_turn",
    "session_request",
    "spawn_session",
    "start_spare",
    "start_turn",
]

logger = logging.getLogger(__name__)

STDERR_LINES = 50
"""How many of the CLI's last stderr lines an error reports."""


@dataclass(frozen=True)
class TurnRunner:
    """What every turn of one model needs: its CLI, environment, tools and the pool of kept sessions."""

    model_name: str | None
    """The model the CLI is asked for (``None``: the CLI's default)."""
    display_name: str
    """The model name errors and responses report."""
    cli_path: Path
    env: Mapping[str, str]
    tools: ToolSetup
    pool: SessionPool[CLISession]
    ledger: SessionLedger = PROCESS_LEDGER
    """The sessions in use (by any model of the process), and the transcripts to remove once unused."""
    session_store: GuardedStore | None = None
    """Where the CLI mirrors session transcripts, and where the transcript of another worker's session is found."""
    slots: ProcessSlots | None = None
    """The model's bound on live CLI processes (``None``: unbounded)."""
    built_options: BuiltOptions = field(default_factory=BuiltOptions)
    """The options of recent requests, reused for requests with the same inputs."""
    parked: ParkingLot[CLITurn] | None = None
    """The model's turns waiting for tool results: a request that waits too long for a process slot closes the
    oldest of them (see :data:`PARKED_SLOT_GRACE`)."""


@dataclass(frozen=True)
class SessionRequest:
    """Everything a new CLI process of a turn is started from (also what a spare for it is started from)."""

    runner: TurnRunner
    options: ClaudeAgentOptions
    signature: str
    servers: Sequence[ToolServerPlan]
    needs: RequestNeeds


@dataclass(frozen=True)
class TurnSummary:
    """What a concluded turn reports on its response."""

    usage: RequestUsage
    finish_reason: FinishReason | None
    provider_details: dict[str, Any]
    provider_response_id: str | None


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
    started = time.perf_counter()
    settings = cast("ClaudeCodeModelSettings", model_settings or {})
    timeout = _turn_timeout(settings)
    # The timeout covers the whole request: the first request's imports, planning, the CLI's start and
    # initialisation, and the turn itself.
    if requested_at is None:
        requested_at = asyncio.get_running_loop().time()
    deadline = None if timeout is None else requested_at + timeout
    await runner.pool.prune()
    keep = settings.get("claude_code_session", "auto") == "auto"
    plan = plan_turn(messages, request_instructions(messages, params), allow_continue=keep)
    execution = settings.get("claude_code_tool_execution")
    servers = plan_tool_servers(
        runner.tools, params, runner.cli_path, checked_tool_execution(execution) if execution is not None else None
    )
    names = tool_names(servers)
    approvals = _approval_plan(settings, params, execution or runner.tools.execution)
    agent_runs_tools = any(server.agent_runs_tools for server in servers) or bool(approvals.tools)
    pending = pending_calls(messages, PROVIDER_NAME) if agent_runs_tools else None
    if pending is not None:
        plan = _resume_pending(plan, messages, pending)
    runs_agent_tools = any(server.runs_agent_tools for server in servers)
    if runs_agent_tools:
        run_context = run_context or current_run_context()
        if run_context is None:
            raise ClaudeCodeError(
                "This request carries function tools but no agent run context: run the model through an "
                "Agent, or register the tools with set_agent_toolsets()."
            )
    request, stderr = session_request(runner, settings, params, plan.system_prompt, servers, approvals)
    needs = request.needs
    # Layered, not merged: the process environment is copied only if a transcript path is needed (not for a turn
    # that continues a live session).
    env = ChainMap(dict(settings.get("claude_code_env", {})), dict(runner.env), os.environ)
    files = TranscriptFiles(env=env, cwd=settings.get("claude_code_cwd"))
    starting = asyncio.timeout_at(deadline)
    slot_wait = _SlotWait()
    try:
        async with starting:
            await require_literal_prompts(runner.cli_path, settings)
            acquired = await _acquire_session(request, plan, files, stderr, keep=keep, slot_wait=slot_wait)
    except TimeoutError as error:
        if not starting.expired():
            raise
        if slot_wait.since is not None and runner.slots is not None:
            raise slot_wait.error(runner.slots.limit) from error
        raise timeout_error(timeout or 0) from error
    session = acquired.session
    router = session.tool_router
    assert router is not None, "every session of the turn runner has a tool router"
    router.bind(run_context if runs_agent_tools else None)
    gate = router.builtin_gate
    translator = TurnTranslator(
        new_parts_manager(params),
        tool_prefixes=names.prefixes,
        output_tool_names=names.plain_calls | frozenset(approvals.tools),
        native_tools=needs.native_tools,
        denied=gate.settled if gate is not None and approvals.tools else _restriction_check(settings),
        builtin_approvals=frozenset(approvals.tools),
    )
    deferred = plan.deferred_call
    if deferred is not None:
        translator.resumes_call(str(deferred["id"]), str(deferred["name"]))
    if pending is not None:
        deliver_answers(router.results, pending)
    return CLITurn(
        runner=runner,
        session=session,
        router=router,
        plan=plan,
        messages_in=messages,
        params=params,
        timeout=timeout,
        deadline=deadline,
        stderr=session.stderr if session.stderr is not None else stderr,
        translator=translator,
        wants_structured_output=needs.output_schema is not None,
        agent_runs_tools=agent_runs_tools,
        new_input=acquired.new_input,
        files=files,
        keep=keep,
        release_source=acquired.release_source,
        session_source=acquired.source,
        store_fault=acquired.store_fault,
        started=started,
        # claude_code_session="new" asks for no process to outlive the turn: no spare either.
        spare_request=request if keep and acquired.source in ("fresh", "spare") else None,
        system_prompt=effective_system_prompt(settings, plan.system_prompt),
    )


def session_request(
    runner: TurnRunner,
    settings: ClaudeCodeModelSettings,
    params: ModelRequestParameters,
    system_prompt: str | None,
    servers: Sequence[ToolServerPlan],
    approvals: ApprovalPlan,
) -> tuple[SessionRequest, deque[str]]:
    """The options and signature of a request's CLI session (built once per request, or reused from an earlier
    request with the same inputs), and its stderr lines.

    The options' ``stderr`` callback is set again when a process is started from them.
    """
    stderr: deque[str] = deque(maxlen=STDERR_LINES)
    tools_signature = [server.signature for server in servers] if servers else None
    output_schema = _native_output_schema(params)
    inputs = (settings, system_prompt, tools_signature, output_schema, params.thinking, params.native_tools, approvals)
    built: tuple[ClaudeAgentOptions, str, RequestNeeds] | None = runner.built_options.get(inputs)
    if built is None:
        needs = RequestNeeds(
            system_prompt=system_prompt,
            output_schema=output_schema,
            thinking=params.thinking,
            allowed_tools=list(tool_names(servers).servers),
            mcp_tools_signature=tools_signature,
            native_tools=plan_native_tools(
                params.native_tools,
                reserved_servers=(AGENT_TOOLS_SERVER, OUTPUT_TOOLS_SERVER, runner.tools.server_name),
            ),
            approvals=approvals,
        )
        options, signature = build_options(
            model_name=runner.model_name,
            cli_path=runner.cli_path,
            settings=settings,
            needs=needs,
            base_env=runner.env,
            stderr=stderr.append,
        )
        built = options, signature, needs
        runner.built_options.put(inputs, built)
    options, signature, needs = built
    return SessionRequest(runner, options, signature, servers, needs), stderr


@dataclass(frozen=True)
class _Acquired:
    session: CLISession
    new_input: list[ContentBlock]
    """The user message that starts the turn in this session."""
    release_source: Callable[[], None]
    """Ends the turn's use of the transcript it started from (a branch's source), once the turn is over."""
    source: SessionSource
    """How the session was reached (reported on the response and its trace span)."""
    store_fault: str | None = None
    """Why the session store's copy of the session is incomplete, if it is."""


def _nothing() -> None:
    return None


async def _acquire_session(
    request: SessionRequest,
    plan: TurnPlan,
    files: TranscriptFiles,
    stderr: deque[str],
    *,
    keep: bool,
    slot_wait: _SlotWait,
) -> _Acquired:
    """The live session that has seen exactly the history, else a new CLI process that resumes, branches or
    replays it (see :mod:`claudecode_model._history.source`); a new conversation claims a spare with its signature
    first."""
    runner = request.runner
    ledger = runner.ledger

    def take_live(point: SessionPoint) -> CLISession | None:
        return runner.pool.take(point.session_id, signature=request.signature, digest=point.digest)

    continue_input = plan.continue_input if plan.continue_input is not None else plan.new_input
    live = take_live(plan.point) if plan.point is not None else None
    if live is not None:
        logger.debug("continuing session %s in its live CLI process", live.session_id)
        return _Acquired(live, continue_input, _nothing, "live")
    transcripts = await find_transcript(files, runner.session_store, plan.point)
    # Everything up to the uses below is synchronous: no other turn can claim the same session meanwhile.
    source = choose_source(plan, take_live=take_live, in_use=ledger.in_use, files=transcripts)
    store = runner.session_store
    staged: list[Any] | None = None
    if store is not None and isinstance(transcripts, SessionCopy) and isinstance(source, ResumeSession | ForkSession):
        staged = transcripts.entries
    release_source = _nothing
    session_id: str | None = None
    owned = not keep
    kind: SessionSource
    match source:
        case LiveSession(session=live):
            logger.debug("continuing session %s in its live CLI process", live.session_id)
            return _Acquired(live, continue_input, _nothing, "live")
        case ResumeSession(session_id=resumed):
            logger.debug("resuming session %s in a new CLI process (no live process holds it)", resumed)
            kind = "resume"
            session_id, new_input = resumed, continue_input
            resume: dict[str, Any] = {"resume": resumed}
        case ForkSession(session_id=forked, message_uuid=at):
            logger.debug("forking session %s at %s: it went on past this history", forked, at)
            kind = "fork"
            release_source = ledger.use(forked)
            session_id, new_input, owned = str(uuid.uuid4()), continue_input, True
            resume = {"resume": forked, "resume_session_at": at, "fork_session": True, "session_id": session_id}
        case ReplayHistory(entries=entries):
            branched = await _branch_at_pending_call(runner.session_store, plan, files)
            if branched is not None:
                kind, session_id = "fork", branched
            else:
                kind = "replay"
                logger.debug("replaying a history of %d entries into a new session (no session holds it)", len(entries))
                session_id = write_replay_transcript(
                    entries, env=files.env, cwd=files.cwd, deferred_call=plan.deferred_call
                )
            new_input, owned, resume = plan.new_input, True, {"resume": session_id}
        case FreshSession():
            spare = await runner.pool.claim_spare(request.signature)
            if spare is not None:
                return _Acquired(spare, plan.new_input, _nothing, "spare")
            kind = "fresh"
            new_input, resume = plan.new_input, {}
    release_session = ledger.use(session_id) if session_id is not None else _nothing
    if session_id is not None and owned:
        ledger.own(session_id, files.path(session_id))
    store_fault: str | None = None
    try:
        if store is not None and isinstance(source, ReplayHistory) and session_id is not None:
            staged = await mirror_transcript(store, files, session_id)
            if store.unsent(store_key(files, session_id)):
                store_fault = "the new session's transcript could not be copied into the session store"
        await _take_slot(runner, slot_wait)
    except BaseException:
        release_session()
        release_source()
        raise
    # The SDK resumes from the store: it is handed the copy the decision was made on (see GuardedStore.staged).
    resumed_id = resume.get("resume")
    staging = (
        store.staged(store_key(files, resumed_id), staged)
        if store is not None and staged and isinstance(resumed_id, str)
        else contextlib.nullcontext()
    )
    try:
        with staging:
            session = await spawn_session(request, stderr, resume=resume, slot_taken=True, on_closed=release_session)
    except BaseException as error:
        release_source()
        raise map_error(error, outcome=None, stderr=stderr, model_name=runner.display_name) from error
    return _Acquired(session, new_input, release_source, kind, store_fault)


async def _branch_at_pending_call(store: GuardedStore | None, plan: TurnPlan, files: TranscriptFiles) -> str | None:
    """A new session branched from the recorded transcript at the reply whose call the turn takes up (the call
    deferred), when the session store is configured and the transcript holds that reply; else ``None`` (replay)."""
    point, deferred = plan.branch_point, plan.deferred_call
    if store is None or point is None or deferred is None:
        return None
    recorded = await recorded_entries_up_to(files, store, point)
    if recorded is None:
        return None
    logger.debug(
        "branching session %s at %s to take up tool call %s", point.session_id, point.message_uuid, deferred.get("id")
    )
    return write_branch_with_deferred_call(recorded, deferred, env=files.env, cwd=files.cwd)


@dataclass
class _SlotWait:
    """Whether (since when) a request waits for a process slot: a timeout then says so."""

    since: float | None = None

    def error(self, limit: int) -> CLITimeoutError:
        waited = time.monotonic() - (self.since or time.monotonic())
        return CLITimeoutError(
            f"No Claude Code process could start within the request's timeout (waited {waited:.1f} s for a slot): "
            f"all {limit} process slots of the model (max_processes) stayed busy",
            timeout=waited,
        )


PARKED_SLOT_GRACE = 5.0
"""Seconds a request waits for a process slot before it closes the longest-parked turn to take its slot.

A turn waiting for tool results keeps its process, so that the run's next request continues it. When every slot is
held that way, waiting longer may never end: under a concurrency limiter (pydantic-ai's ``ConcurrencyLimitedModel``)
the requests that would continue those turns wait for the limiter this request holds. A closed turn's run continues
later from its history (a replay), as after an expiry."""


async def _take_slot(runner: TurnRunner, slot_wait: _SlotWait) -> None:
    """Wait for a free process slot (stopping idle processes first, then, after :data:`PARKED_SLOT_GRACE`, the
    longest-parked turn); the request's timeout bounds the wait."""
    slots = runner.slots
    if slots is None:
        return
    slot_wait.since = time.monotonic()
    while True:
        try:
            async with asyncio.timeout(PARKED_SLOT_GRACE if runner.parked is not None else None):
                await slots.acquire(runner.pool.evict_idle)
            break
        except TimeoutError:
            assert runner.parked is not None
            if not await runner.parked.close_oldest():
                await slots.acquire(runner.pool.evict_idle)
                break
    slot_wait.since = None


async def spawn_session(
    request: SessionRequest,
    stderr: deque[str],
    *,
    resume: Mapping[str, Any] | None = None,
    slot_taken: bool = False,
    on_closed: Callable[[], None] = _nothing,
    traced: bool = True,
    warm_up: bool = False,
) -> CLISession:
    """Start a new CLI process for ``request``: its tool servers with a new tool router, then the process.

    ``traced`` passes the current trace context to the CLI (``TRACEPARENT``); a spare, started for a request yet to
    come, gets none, and is warmed up (``warm_up``) while nobody waits for it.

    Without ``slot_taken`` the process takes a free slot of the model's process cap, or none is started
    (:class:`NoSlotError`); the slot is given back once the process is gone, and ``on_closed`` is called then
    (also if the start fails).
    """
    runner = request.runner
    slots = runner.slots
    if slots is not None and not slot_taken and not slots.try_acquire():
        on_closed()
        raise NoSlotError("every process slot of the model is taken")
    release = slots.release if slots is not None else _nothing
    remove_temp = _nothing
    try:
        router = RunToolRouter()
        hooks = request.options.hooks
        if request.needs.approvals:
            router.builtin_gate = gate = BuiltinGate(request.needs.approvals)
            hooks = _merged_hooks(hooks, gate.hooks(router.results.wait))
        served = await serve_tool_servers(runner.tools, request.servers, router)
        cli_env = {key: value for tools in served for key, value in tools.cli_env.items()}
        temp_env, remove_temp = private_cli_temp(request.options.env)
        options = replace(
            request.options,
            **dict(resume or {}),
            session_store=runner.session_store,
            # Each entry reaches the store as the CLI writes it, so that a turn cut off while it waits for tool
            # results (its worker gone) can be taken up from the store by another worker.
            session_store_flush="eager",
            mcp_servers={
                **cast("dict[str, McpServerConfig]", request.options.mcp_servers),  # the native tools' remote servers
                **{server.name: tools.config for server, tools in zip(request.servers, served, strict=True)},
            },
            env={**request.options.env, **cli_env, **temp_env, **(traceparent_env() if traced else {})},
            hooks=hooks,
            stderr=stderr.append,
        )
        options, remove_prompt_file = with_prompt_file(options)
        # The session keeps the signature computed without per-process values (such as the IPC secret).
        try:
            session = CLISession(options, signature=request.signature, tool_router=router, tool_servers=served)
        except BaseException:
            remove_prompt_file()
            raise
    except BaseException:
        release()
        on_closed()
        remove_temp()
        raise
    session.stderr = stderr
    session.on_closed.extend((release, on_closed, remove_prompt_file, remove_temp))
    await session.start(warm_up=warm_up)
    return session


async def prewarm_turn(
    runner: TurnRunner,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> bool:
    """Start a spare for the session a request like this one would start, and wait until it is ready.

    Whether a spare is ready for it now (started here, or already there).
    """
    settings = cast("ClaudeCodeModelSettings", model_settings or {})
    await runner.pool.prune()
    plan = plan_turn(messages, request_instructions(messages, params), allow_continue=False)
    execution = settings.get("claude_code_tool_execution")
    servers = plan_tool_servers(
        runner.tools, params, runner.cli_path, checked_tool_execution(execution) if execution is not None else None
    )
    approvals = _approval_plan(settings, params, execution or runner.tools.execution)
    request, _ = session_request(runner, settings, params, plan.system_prompt, servers, approvals)
    await require_literal_prompts(runner.cli_path, settings)
    start_spare(request)
    return await runner.pool.wait_spare(request.signature)


def start_spare(request: SessionRequest) -> bool:
    """Start a spare session for ``request``'s signature in the background, within the pool's bounds."""

    async def spawn() -> CLISession | None:
        try:
            return await spawn_session(request, deque(maxlen=STDERR_LINES), traced=False, warm_up=True)
        except NoSlotError:
            return None

    return request.runner.pool.start_spare(request.signature, spawn)


class NoSlotError(RuntimeError):
    """No process slot was free for a spare (spares never wait for one)."""


@dataclass(eq=False, repr=False, kw_only=True)
class CLITurn:
    """One CLI turn in flight: its session, the translator of its SDK messages, and the cleanup owed at the end."""

    runner: TurnRunner
    session: CLISession
    router: RunToolRouter
    plan: TurnPlan
    messages_in: list[ModelMessage]
    params: ModelRequestParameters
    timeout: float | None
    deadline: float | None = None
    """When the request's time is up (loop time), counted from its start; ``None``: no timeout."""
    stderr: deque[str]
    translator: TurnTranslator
    wants_structured_output: bool
    new_input: list[ContentBlock]
    files: TranscriptFiles
    keep: bool = True
    """Whether the session may serve follow-ups (``claude_code_session="auto"``)."""
    release_source: Callable[[], None] = _nothing
    session_source: SessionSource = "fresh"
    """How the turn reached its session: ``live``, ``resume``, ``fork``, ``replay`` or ``fresh``."""
    store_fault: str | None = None
    """Why the session store's copy of the session lacks part of this turn's conversation, if it does."""
    agent_runs_tools: bool = False
    """pydantic-ai runs the agent's tools: a reply calling them ends a response and the turn waits."""
    started: float = field(default_factory=time.perf_counter)
    """When the request started (``time.perf_counter()``)."""
    spare_request: SessionRequest | None = None
    """What to start a spare from once the turn is over (turns of new conversations only)."""
    system_prompt: str | None = None
    """The system prompt the CLI process was started with (a later request of the turn must ask for the same)."""
    content_events: bool = True
    """Whether the request being answered streams: without, the session drops the stream events of text and
    thinking as they arrive (the assistant messages carry the same content)."""
    first_token_seconds: float | None = field(default=None, init=False)
    """Seconds from the request to the first token of Claude's answer (a streamed delta or a message)."""
    raw_messages: list[Message] = field(default_factory=list, init=False)
    completed: bool = field(default=False, init=False)
    failed: bool = field(default=False, init=False)
    timed_out: bool = field(default=False, init=False)
    """The request's time ran out (its CLI is killed at once)."""
    _exact: bool = field(default=True, init=False)
    """Whether the session's conversation is exactly the history and this turn's response."""
    _source: AsyncGenerator[Message | ToolsWaiting, None] | None = field(default=None, init=False)
    _started: float = field(default_factory=time.monotonic, init=False)

    @property
    def waiting_calls(self) -> list[str]:
        """The ids of the calls the turn waits for (its last reply called tools pydantic-ai runs), else empty."""
        return self.translator.parked_calls if self.agent_runs_tools and not self.failed else []

    def continue_with(self, messages: list[ModelMessage], parts: ModelResponsePartsManager) -> None:
        """Go on with the next response of this turn, for the request ``messages`` (its answers were delivered); the
        timeout counts again from now."""
        self.messages_in = messages
        self.translator.next_response(parts)
        self.started, self.first_token_seconds = time.perf_counter(), None
        if self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    async def say(self, prompts: Sequence[UserPromptPart]) -> None:
        """Send user prompts to the waiting turn (Claude gets them with the answers to its calls)."""
        content = [block for part in prompts for block in user_content_blocks(part.content)]
        message = {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}
        await self.session.say_during_turn(message)

    async def close_parked(self) -> None:
        """Stop a turn that waits for results: the CLI is stopped first (so that it sends Claude nothing more), then
        any handler still waiting gets a "not executed" error."""
        self.failed = True
        self.release_source()
        try:
            await self.session.abort(at_once=True)
        finally:
            self.router.results.close()

    def kill(self) -> None:
        """Synchronous last resort (interpreter exit, or the event loop is gone)."""
        self.session.kill()

    def stop_now(self) -> None:
        """Kill the CLI of a turn parked on a loop that does not run, from any thread (SIGKILL: a call that fails
        would make the CLI send Claude one more request); :meth:`close_parked` on the loop tidies up later."""
        self.session.terminate(signal.SIGKILL)

    @property
    def model_used(self) -> str:
        """The model that wrote the last reply, else the one the CLI was started with (its init message), else the
        name the model was created with."""
        used = self.translator.outcome.reply_model or self.translator.outcome.init_data.get("model")
        return used if isinstance(used, str) and used else self.runner.display_name

    def _user_message(self) -> dict[str, Any] | None:
        if self.plan.deferred_call is not None:
            return None  # the resumed session takes up the call its transcript deferred by itself
        return {
            "type": "user",
            "message": {"role": "user", "content": self.new_input},
            "parent_tool_use_id": None,
        }

    async def messages(self) -> AsyncGenerator[Message | ToolsWaiting, None]:
        """The SDK messages of this turn, with the timeout and error mapping applied.

        Leaving the iteration early does not end the turn: iterating again goes on with the next message. The
        timeout counts from the start of the request (the CLI's start included).
        """
        self.session.delivery = None if self.content_events else delivery_unless_streaming
        if self._source is None:
            self._source = self.session.run_turn(self._user_message())
            if self.deadline is None and self.timeout is not None:
                self.deadline = asyncio.get_running_loop().time() + self.timeout
        try:
            async with asyncio.timeout_at(self.deadline):
                async for message in self._source:
                    if isinstance(message, ToolsWaiting):
                        if self.agent_runs_tools and self.translator.tools_waiting(message.ids):
                            yield message  # the response ends here: its consumer sees waiting_calls
                        continue
                    if isinstance(message, MirrorErrorMessage):
                        self._mirror_failed(message)
                        continue
                    self.raw_messages.append(message)
                    if self.first_token_seconds is None and _is_token(message):
                        self.first_token_seconds = max(self.session.arrived - self.started, 0.0)
                    yield message
        except TimeoutError as error:
            self.failed = self.timed_out = True
            raise timeout_error(self.timeout or 0) from error
        except GeneratorExit:
            raise  # the consumer left: the turn itself goes on
        except BaseException as error:
            self.failed = True
            if self.router.fatal_error is not None and isinstance(error, Exception):
                raise self.router.fatal_error from error
            classified = (
                classify_failed_turn(self.raw_messages, self.runner.display_name)
                if isinstance(error, Exception) and not isinstance(error, ClaudeCodeError)
                else None
            )
            mapped = classified or map_error(
                error, outcome=self.translator.outcome, stderr=self.stderr, model_name=self.runner.display_name
            )
            if mapped is error:
                raise
            raise mapped from error
        self._end()

    def _mirror_failed(self, message: MirrorErrorMessage) -> None:
        """The SDK could not write part of the session's transcript into the store (it dropped those entries; the
        store guard keeps them and sends them again with the session's next write)."""
        session_id = message.key["session_id"] if message.key is not None else self.session.session_id
        self.store_fault = f"a session store write failed: {message.error}"
        logger.warning(
            "session store: transcript entries of session %s could not be written (%s); until a later turn of the "
            "session on this worker writes them, other workers replay the conversation instead of resuming it",
            session_id,
            message.error,
        )

    def _end(self) -> None:
        """Judge a turn whose messages all arrived."""
        if self.router.fatal_error is not None:
            self.failed = True
            raise self.router.fatal_error
        if self.router.output_call is not None:
            # Stopped on purpose at the output tool call: pydantic-ai validates it; the session stays usable.
            self.completed = True
            return
        error = classify_failed_turn(self.raw_messages, self.runner.display_name) or result_error(
            self.translator.outcome, model_name=self.runner.display_name
        )
        if error is not None:
            self.failed = True
            raise error
        self.completed = True

    def structured_output_text(self) -> str:
        """The validated JSON the CLI returned for a native output schema."""
        result = self.translator.outcome.result
        structured = result.structured_output if result is not None else None
        if structured is None:
            raise StructuredOutputError(
                "Claude Code finished without producing the structured output the request asked for"
            )
        return json.dumps(structured, ensure_ascii=False)

    def conclude(self, parts: list[ModelResponsePart]) -> TurnSummary:
        """Usage, cost, finish reason and details of the finished turn; the session remembers what it has seen."""
        translator = self.translator
        result = translator.outcome.result
        usage = translator.usage(
            self.session.reported_cost_usd, lambda response_usage: list_price(response_usage, self.model_used)
        )
        if result is not None and result.total_cost_usd is not None:
            self.session.reported_cost_usd = result.total_cost_usd
        details = translator.provider_details()
        if self.first_token_seconds is not None:
            details[FIRST_TOKEN_KEY] = round(self.first_token_seconds, 4)
        attempts = translator.attempts
        if attempts.aborted:
            details[ABORTED_ATTEMPTS_KEY] = attempts.aborted
        session_id = translator.outcome.session_id
        if session_id is not None:
            digest = self.plan.conversation_digest([*self.messages_in, ModelResponse(parts=parts)])
            details[HISTORY_DIGEST_KEY] = digest
            # A session that kept part of an aborted attempt in its conversation holds more than the history.
            self._exact = self.keep and not attempts.tainted
            self.session.seen_digest = digest if self._exact else None
            if self._exact and translator.outcome.last_entry_uuid is not None:
                details[RESUME_AT_KEY] = translator.outcome.last_entry_uuid
            self._note_session(session_id)
        details[SESSION_SOURCE_KEY] = self.session_source
        if self.store_fault is not None:
            details[SESSION_STORE_KEY] = "incomplete"
        record_turn(details, parts)
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "Claude Code turn done in %.2f s: %d input and %d output tokens, cost %s, session %s",
                time.monotonic() - self._started,
                usage.input_tokens,
                usage.output_tokens,
                f"${usage.cost:.6f}" if usage.cost is not None else "unknown",
                session_id,
            )
        return TurnSummary(
            usage=usage,
            finish_reason="tool_call" if self.router.output_call is not None else translator.finish_reason(),
            provider_details=details,
            provider_response_id=result.uuid if result is not None else None,
        )

    def _note_session(self, session_id: str) -> None:
        """Count the session's use of its id now that it is known (a fresh session), and own what it writes when
        it serves no follow-up."""
        ledger = self.runner.ledger
        if not ledger.in_use(session_id):
            self.session.on_closed.append(ledger.use(session_id))
            if not self.keep:
                ledger.own(session_id, self.files.path(session_id))

    async def stop(self) -> None:
        """Stop the turn now (the stream was cancelled): the session is not reused."""
        self.failed = True
        await self.session.abort()

    async def finish(self) -> None:
        """Keep the session for the next turn if it ended cleanly, otherwise stop the CLI."""
        source, self._source = self._source, None
        if source is not None:
            with contextlib.suppress(RuntimeError):  # still running in a task that was cancelled
                await source.aclose()
        self.release_source()
        if not self.completed or self.failed:
            # Out of time: the CLI is killed at once, so that the error is not kept waiting for its exit.
            await self.session.abort(at_once=self.timed_out)
        elif not self._exact:
            await self.session.close()
        else:
            await self.runner.pool.put(self.session)
        slots = self.runner.slots
        if slots is not None and slots.waiting:
            self.runner.pool.evict_idle()  # a request waits for a process slot: it gets this one
        spare_request, self.spare_request = self.spare_request, None
        if spare_request is not None and self.completed and not self.failed:
            # Started once the turn is over, so that it does not compete with the turn for CPU.
            start_spare(spare_request)


def _is_token(message: Message) -> bool:
    """Whether ``message`` carries the first of Claude's answer: a content delta, or a whole message."""
    if isinstance(message, StreamEvent):
        return message.event.get("type") == "content_block_delta"
    return isinstance(message, AssistantMessage)


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


def _merged_hooks(hooks: dict[Any, list[Any]] | None, more: Mapping[str, list[Any]]) -> dict[Any, list[Any]]:
    merged: dict[Any, list[Any]] = {event: list(matchers) for event, matchers in (hooks or {}).items()}
    for event, matchers in more.items():
        merged[event] = [*merged.get(event, []), *matchers]
    return merged


def _restriction_check(settings: ClaudeCodeModelSettings) -> Callable[[str, dict[str, Any], str], bool] | None:
    """Whether the CLI's restriction hook will deny a call (so pydantic-ai must not run it)."""
    restrictions = settings.get("claude_code_tool_parameter_restrictions")
    if not restrictions:
        return None
    return lambda cli_name, arguments, call_id: forbidden_argument(restrictions, cli_name, arguments) is not None


def _resume_pending(plan: TurnPlan, messages: list[ModelMessage], pending: PendingCalls) -> TurnPlan:
    """A plan that takes up the pending calls of the history's last response in a new session (no turn is parked
    for them here): the history replayed, pydantic-ai's answers delivered as described in :func:`resume_plan`."""
    index = next(i for i, message in enumerate(messages) if message is pending.response)
    prompt = [block for part in pending.prompts for block in user_content_blocks(part.content)]
    resumed = resume_plan(transcript_of(messages[: index + 1]), pending, prompt)
    return replace(
        plan,
        new_input=resumed.new_input,
        replay_entries=resumed.entries,
        deferred_call=resumed.deferred_call,
        # One deferred call and nothing else to say: the session's own transcript can be branched at that reply.
        branch_point=plan.point if resumed.deferred_call is not None and len(pending.calls) == 1 else None,
        point=None,
        continue_input=None,
    )


def _turn_timeout(settings: ClaudeCodeModelSettings) -> float | None:
    explicit = settings.get("claude_code_timeout")
    if explicit is not None:
        return float(explicit)
    standard = settings.get("timeout")
    return float(standard) if isinstance(standard, int | float) else None


def _native_output_schema(params: ModelRequestParameters) -> dict[str, Any] | None:
    if params.output_mode != "native" or params.output_object is None:
        return None
    return dict(params.output_object.json_schema)
