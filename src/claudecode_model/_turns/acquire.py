"""A turn's CLI session: the live one that has seen exactly the history, else a new process that resumes,
branches or replays it, or a spare; new processes start within the model's process cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import anyio
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import McpServerConfig
from pydantic_ai.models import ModelRequestParameters

from claudecode_model._history.cut_results import RESULT_READER_SERVER
from claudecode_model._history.plan import SessionPoint, TurnPlan
from claudecode_model._history.replay import TranscriptEntry, write_branch_with_deferred_call, write_replay_transcript
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
from claudecode_model._history.to_anthropic import ContentBlock
from claudecode_model._history.transcripts import TranscriptFiles
from claudecode_model._process.mcp_config_file import with_private_mcp_config
from claudecode_model._process.mcp_logs import remove_mcp_logs
from claudecode_model._process.prompt_file import with_prompt_file
from claudecode_model._process.temp import private_cli_temp
from claudecode_model._sessions.claim import ClaimRefusedError, SessionClaim, parked_options
from claudecode_model._sessions.options import RequestNeeds, build_options, launch_signature
from claudecode_model._sessions.session import CLISession, RewindRefusedError
from claudecode_model._sessions.trace_context import traceparent_env
from claudecode_model._stream.telemetry import SessionSource
from claudecode_model._tools.builtin_approvals import ApprovalPlan, BuiltinGate
from claudecode_model._tools.native import plan_native_tools
from claudecode_model._tools.request import ToolServerPlan, reads_cut_results, serve_tool_servers, tool_names
from claudecode_model._tools.router import AGENT_TOOLS_SERVER, OUTPUT_TOOLS_SERVER, RunToolRouter
from claudecode_model._tools.servers import ServedTools, serves_inprocess
from claudecode_model._turns.error_map import ErrorMap, mapping_errors
from claudecode_model._turns.runner import STDERR_LINES, SessionRequest, TurnRunner, nothing
from claudecode_model.exceptions import CLITimeoutError
from claudecode_model.settings import ClaudeCodeModelSettings

__all__ = [
    "PARKED_SLOT_GRACE",
    "AcquiredSession",
    "NewProcess",
    "NoSlotError",
    "SlotWait",
    "acquire_session",
    "session_request",
    "spawn_session",
    "start_spare",
]

logger = logging.getLogger(__name__)


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
    inputs = (
        settings,
        system_prompt,
        tools_signature,
        output_schema,
        params.thinking,
        params.cache,
        params.native_tools,
        approvals,
    )
    built: tuple[ClaudeAgentOptions, str, RequestNeeds, str | None] | None = runner.built_options.get(inputs)
    if built is None:
        needs = RequestNeeds(
            system_prompt=system_prompt,
            output_schema=output_schema,
            thinking=params.thinking,
            cache=params.cache,
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
        launch = launch_signature(options, settings, needs, runner.cli_path)
        built = options, signature, needs, launch
        runner.built_options.put(inputs, built)
    options, signature, needs, launch = built
    return SessionRequest(runner, options, signature, servers, needs, launch), stderr


@dataclass(frozen=True)
class AcquiredSession:
    """The session a turn runs in, and how it got there."""

    session: CLISession
    new_input: list[ContentBlock]
    """The user message that starts the turn in this session."""
    release_source: Callable[[], None]
    """Ends the turn's use of the transcript it started from (a branch's source), once the turn is over."""
    source: SessionSource
    """How the session was reached (reported on the response and its trace span)."""
    store_fault: str | None = None
    """Why the session store's copy of the session is incomplete, if it is."""


@dataclass(frozen=True)
class NewProcess:
    """How a turn starts in a new CLI process: what :func:`acquire_session` decided, for :func:`_start_new` to
    carry out."""

    source: SessionSource
    new_input: list[ContentBlock]
    resume: dict[str, Any] = field(default_factory=dict)
    """The SDK options that resume (or fork) a transcript; empty for a new conversation."""
    session_id: str | None = None
    """The session the process resumes or writes, counted in use while it runs."""
    owned: bool = True
    """Whether the session's transcript is removed once no process uses it (it serves no follow-up)."""
    release_source: Callable[[], None] = nothing
    """Ends the turn's use of the transcript it branches from."""
    staged: list[Any] | None = None
    """The session store's copy of the resumed transcript the decision was made on (handed to the SDK)."""
    mirrored: bool = False
    """The transcript was written here (a replay or branch): copy it into the session store first."""


async def acquire_session(
    request: SessionRequest,
    plan: TurnPlan,
    files: TranscriptFiles,
    errors: ErrorMap,
    *,
    keep: bool,
    slot_wait: SlotWait,
) -> AcquiredSession:
    """The live session that has seen exactly the history, else a new CLI process that resumes, branches or
    replays it (see :mod:`claudecode_model._history.source`); a new conversation takes a spare with its signature
    first, else claims a parked one with its launch signature."""
    runner = request.runner
    continue_input = plan.continue_input if plan.continue_input is not None else plan.new_input

    def take_live(point: SessionPoint) -> CLISession | None:
        return runner.pool.take(point.session_id, signature=request.signature, digest=point.digest)

    # A live session needs no transcript: it is looked for first, and again once they are read (put back meanwhile).
    live = take_live(plan.point) if plan.point is not None else None
    if live is not None:
        return _continued(live, continue_input)
    transcripts = await find_transcript(files, runner.session_store, plan.point)
    # Everything up to the uses below is synchronous: no other turn can claim the same session meanwhile.
    source = choose_source(
        plan, take_live=take_live, in_use=runner.ledger.in_use, files=transcripts, was_cut=runner.ledger.was_cut
    )
    staged = transcripts.entries if isinstance(transcripts, SessionCopy) and runner.session_store is not None else None
    match source:
        case LiveSession(session=live):
            return _continued(live, continue_input)
        case ResumeSession(session_id=resumed):
            logger.debug("resuming session %s in a new CLI process (no live process holds it)", resumed)
            how = NewProcess("resume", continue_input, {"resume": resumed}, resumed, not keep, staged=staged)
        case ForkSession(session_id=forked, message_uuid=at):
            logger.debug("forking session %s at %s: it went on past this history", forked, at)
            how = _fork(runner.ledger.use(forked), forked, at, continue_input, staged)
        case ReplayHistory(entries=entries):
            how = await _replay(runner.session_store, plan, files, entries)
        case FreshSession():
            # A ready spare first (no conversation loses its CLI), then a kept CLI rewound (faster than a spare
            # still starting), then a spare still starting (sooner than a new CLI).
            for wait in (False, True):
                spare = await runner.pool.claim_spare(request.signature, wait=wait) or await _claim_parked(
                    request, wait=wait
                )
                if spare is not None:
                    return AcquiredSession(spare, plan.new_input, nothing, "spare")
                rewound = await _rewind_kept(request) if keep and not wait else None
                if rewound is not None:
                    return AcquiredSession(rewound, plan.new_input, nothing, "rewound")
            how = NewProcess("fresh", plan.new_input)
    return await _start_new(request, how, files, errors, slot_wait)


async def _claim_parked(request: SessionRequest, *, wait: bool = True) -> CLISession | None:
    """A parked spare with the request's launch signature, claimed for its session (its tool servers served with
    the spare's tool router): the model's own, else one another model of the program parked (a brand-new model's
    first conversation, say); ``None`` when there is none (without ``wait``: none is ready), or when the CLI refuses
    the claim (the spare is stopped).
    """
    launch = request.launch_signature
    if launch is None:
        return None
    spare = await request.runner.pool.claim_spare(launch, wait=wait)
    for other in request.runner.neighbours() if spare is None else []:
        if (spare := await other.pool.claim_spare(launch, wait=wait)) is not None:
            logger.debug("claiming a CLI another model parked: the same launch")
            break
    if spare is None:
        return None
    served: list[ServedTools] = []
    try:
        router = spare.tool_router
        assert router is not None  # every spawned session has one
        served = await serve_tool_servers(request.runner.tools, request.servers, router)
        servers: dict[str, McpServerConfig] = {
            server.name: tools.config for server, tools in zip(request.servers, served, strict=True)
        }
        if reads_cut_results(request.servers) and await serves_inprocess(request.runner.cli_path):
            # The reader the CLI was launched with if it was, else one connected now.
            launched = cast("dict[str, McpServerConfig]", spare.options.mcp_servers)
            servers[RESULT_READER_SERVER] = launched.get(RESULT_READER_SERVER) or router.reader.server()
        options = replace(request.options, mcp_servers=servers)
        # The allow rules of the session's servers that the CLI was not launched with (a launch without tools).
        claim = SessionClaim.of(
            options, allowed=[rule for rule in request.needs.allowed_tools if rule not in spare.options.allowed_tools]
        )
        claimed_at = time.time() - 1.0  # a file's modification time may be rounded down to the second
        await spare.claim(claim, signature=request.signature, tool_servers=served)
    except BaseException as error:
        for tools in served:
            tools.discard()
            with anyio.CancelScope(shield=True):
                await tools.stop()
        await spare.abort()
        if not isinstance(error, ClaimRefusedError):
            raise
        logger.debug("a parked CLI refused the claim (%s): the session starts in a new process", error)
        return None
    if claim.cwd != (spare.options.cwd or os.getcwd()):
        # The CLI writes its MCP logs where it was claimed.
        env, sessions = spare.options.env, spare.served_sessions

        def remove_claimed_logs() -> None:
            remove_mcp_logs(env, claim.cwd, sessions, claimed_at)

        spare.when_closed(remove_claimed_logs)
    return spare


async def _rewind_kept(request: SessionRequest) -> CLISession | None:
    """An idle kept session with the request's signature whose conversation its CLI opened, rewound to empty (the
    model's own least recently used one, else another model's of the program); ``None`` when there is none. A CLI
    that refuses the rewind is stopped, and the next one is tried.

    Its conversation's follow-ups replay their history from then on: the transcript entries are marked cut in the
    ledger before the rewind, so that a turn that read the transcript just before does not resume at one of them. A
    spare of the signature whose CLI is not spawned yet is given up: the kept CLIs serve such conversations.

    A CLI with built-in tools is never rewound: its conversation may have left work running (a background command,
    a subagent) or state behind (the files it read) that a new CLI would not have.
    """
    if request.options.tools != []:
        return None
    runner = request.runner
    for pool in [runner.pool, *(other.pool for other in runner.neighbours())]:
        while (kept := pool.take_rewindable(request.signature)) is not None:
            if kept.session_id is not None:
                runner.ledger.cut(kept.session_id, kept.conversation_points)
            try:
                await kept.rewind()
            except BaseException as error:
                await kept.abort()
                if not isinstance(error, RewindRefusedError):
                    raise
                logger.debug("a kept CLI refused to rewind its conversation (%s): it is stopped", error)
                continue
            if pool is not runner.pool:
                logger.debug("rewinding a CLI another model kept: the same session signature")
            runner.pool.drop_waiting_spares(request.signature)
            return kept
    return None


def _continued(live: CLISession, new_input: list[ContentBlock]) -> AcquiredSession:
    logger.debug("continuing session %s in its live CLI process", live.session_id)
    return AcquiredSession(live, new_input, nothing, "live")


def _fork(
    release_source: Callable[[], None], forked: str, at: str, new_input: list[ContentBlock], staged: list[Any] | None
) -> NewProcess:
    """A new session cut from ``forked`` at the entry ``at``."""
    session_id = str(uuid.uuid4())
    resume = {"resume": forked, "resume_session_at": at, "fork_session": True, "session_id": session_id}
    return NewProcess("fork", new_input, resume, session_id, release_source=release_source, staged=staged)


async def _replay(
    store: GuardedStore | None, plan: TurnPlan, files: TranscriptFiles, entries: list[TranscriptEntry]
) -> NewProcess:
    """A new session whose transcript is written here: branched at the pending call, else the whole history."""
    session_id = await _branch_at_pending_call(store, plan, files)
    source: SessionSource = "fork"
    if session_id is None:
        source = "replay"
        logger.debug("replaying a history of %d entries into a new session (no session holds it)", len(entries))
        session_id = write_replay_transcript(entries, env=files.env, cwd=files.cwd, deferred_call=plan.deferred_call)
    return NewProcess(source, plan.new_input, {"resume": session_id}, session_id, mirrored=True)


async def _start_new(
    request: SessionRequest, how: NewProcess, files: TranscriptFiles, errors: ErrorMap, slot_wait: SlotWait
) -> AcquiredSession:
    """Carry out ``how``: count the session in use (and own its transcript), copy a written transcript into the
    session store, wait for a process slot, and start the process (from the store's copy the decision was made
    on, see :meth:`GuardedStore.staged`)."""
    runner, session_id = request.runner, how.session_id
    release_session = runner.ledger.use(session_id) if session_id is not None else nothing
    if session_id is not None and how.owned:
        runner.ledger.own(session_id, files.path(session_id))
    try:
        staged, store_fault = await _store_copy(runner.session_store, files, how)
        await _take_slot(runner, slot_wait)
    except BaseException:
        release_session()
        how.release_source()
        raise
    store, resumed_id = runner.session_store, how.resume.get("resume")
    staging = (
        store.staged(store_key(files, resumed_id), staged)
        if store is not None and staged and isinstance(resumed_id, str)
        else contextlib.nullcontext()
    )
    try:
        with mapping_errors(errors), staging:
            session = await spawn_session(
                request, errors.stderr, resume=how.resume, slot_taken=True, on_closed=release_session
            )
    except BaseException:
        how.release_source()
        raise
    return AcquiredSession(session, how.new_input, how.release_source, how.source, store_fault)


async def _store_copy(
    store: GuardedStore | None, files: TranscriptFiles, how: NewProcess
) -> tuple[list[Any] | None, str | None]:
    """The store's copy of the transcript the process resumes, and why it is incomplete (if it is)."""
    if store is None or not how.mirrored or how.session_id is None:
        return how.staged, None
    staged = await mirror_transcript(store, files, how.session_id)
    if store.unsent(store_key(files, how.session_id)):
        return staged, "the new session's transcript could not be copied into the session store"
    return staged, None


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
class SlotWait:
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


async def _take_slot(runner: TurnRunner, slot_wait: SlotWait) -> None:
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
    on_closed: Callable[[], None] = nothing,
    traced: bool = True,
    warm_up: bool = False,
    parked: bool = False,
    on_spawned: Callable[[CLISession], None] | None = None,
) -> CLISession:
    """Start a new CLI process for ``request``: its tool servers with a new tool router, then the process.

    ``traced`` passes the current trace context to the CLI (``TRACEPARENT``); a spare, started for a request yet to
    come, gets none, and is warmed up (``warm_up``) while nobody waits for it. A ``parked`` CLI serves no tool
    servers and waits for a claim (:meth:`CLISession.claim`), which gives it those of the session that claims it.

    Without ``slot_taken`` the process takes a free slot of the model's process cap, or none is started
    (:class:`NoSlotError`); the slot is given back once the process is gone, and ``on_closed`` is called then
    (also if the start fails). ``on_spawned`` is told the session once its CLI's process exists.
    """
    runner = request.runner
    await runner.pool.budget.settled()  # idle CLIs just pushed out of the budget go first
    slots = runner.slots
    if slots is not None and not slot_taken and not slots.try_acquire():
        on_closed()
        raise NoSlotError("every process slot of the model is taken")
    release = slots.release if slots is not None else nothing
    remove_temp = nothing
    served: list[ServedTools] = []
    try:
        gate = BuiltinGate(request.needs.approvals) if request.needs.approvals else None
        router = RunToolRouter(builtin_gate=gate)
        hooks = request.options.hooks
        if gate is not None:
            hooks = _merged_hooks(hooks, gate.hooks())
        # The tools that read a cut result are served in process, whatever the agent's tools use.
        tool_servers = () if parked else request.servers
        # A parked CLI serves the reader from its launch too: the same for every session of its launch signature.
        reader = reads_cut_results(request.servers) and await serves_inprocess(runner.cli_path)
        served = await serve_tool_servers(runner.tools, tool_servers, router)
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
                **{server.name: tools.config for server, tools in zip(tool_servers, served, strict=True)},
                **({RESULT_READER_SERVER: router.reader.server()} if reader else {}),
            },
            env={**request.options.env, **cli_env, **temp_env, **(traceparent_env() if traced else {})},
            hooks=hooks,
            can_use_tool=gate.can_use_tool(router.results.wait) if gate is not None else request.options.can_use_tool,
            stderr=stderr.append,
        )
        if parked:
            options = parked_options(options)
        options, remove_prompt_file = with_prompt_file(options)
        # Secrets stay off the command line: the servers the CLI reaches itself are read from a private file.
        try:
            options, remove_mcp_config = with_private_mcp_config(options)
        except BaseException:
            remove_prompt_file()
            raise
        # The session keeps the signature computed without per-process values (such as the IPC secret).
        try:
            session = CLISession(
                options,
                signature=request.signature,
                tool_router=router,
                tool_servers=served,
                stderr=stderr,
                transports=runner.cli_transports,
            )
        except BaseException:
            remove_prompt_file()
            remove_mcp_config()
            raise
    except BaseException:
        release()
        on_closed()
        remove_temp()
        for tools in served:  # no session owns the tool servers yet: their IPC sessions stop here
            tools.discard()
            with anyio.CancelScope(shield=True):
                await tools.stop()
        raise
    started = time.time() - 1.0  # a file's modification time may be rounded down to the second
    cwd = options.cwd or os.getcwd()

    def remove_logs() -> None:
        remove_mcp_logs(options.env, str(cwd), session.served_sessions, started)

    session.when_closed(
        release, on_closed, remove_prompt_file, remove_mcp_config, remove_temp, router.reader.clear, remove_logs
    )
    if on_spawned is not None:
        session.when_spawned(lambda: on_spawned(session))
    await session.start(warm_up=warm_up)
    return session


def start_spare(request: SessionRequest, *, parked: bool | None = None) -> bool:
    """Start a spare session for requests like ``request`` in the background, within the pool's bounds.

    A ready spare has the request's signature: the fastest start of a next conversation of the same kind. A
    ``parked`` one (a CLI started with ``--await-claim``, keyed by the launch signature) serves any new conversation
    with that launch signature, for the time of its claim. ``parked=None`` parks once the model's new conversations
    have had two signatures with this launch signature.
    """
    launch = request.launch_signature
    launches = request.runner.launches
    if parked is None:
        parked = launch is not None and launches.note(launch, request.signature, request.needs.allowed_tools)
    park = parked and launch is not None
    if park and launch is not None:
        # Allowed at the launch, the tools of every agent of the launch need no rules at the claim (a claim with
        # them costs an extra request); harmless to a session without those servers.
        family = [rule for rule in launches.allowed(launch) if rule not in request.options.allowed_tools]
        options = replace(request.options, allowed_tools=[*request.options.allowed_tools, *family])
        request = replace(request, options=options)

    async def spawn(spawned: Callable[[CLISession], None]) -> CLISession | None:
        try:
            return await spawn_session(
                request, deque(maxlen=STDERR_LINES), traced=False, warm_up=not park, parked=park, on_spawned=spawned
            )
        except NoSlotError:
            return None

    return request.runner.pool.start_spare(launch if park and launch is not None else request.signature, spawn)


class NoSlotError(RuntimeError):
    """No process slot was free for a spare (spares never wait for one)."""


def _merged_hooks(hooks: dict[Any, list[Any]] | None, more: Mapping[str, list[Any]]) -> dict[Any, list[Any]]:
    merged: dict[Any, list[Any]] = {event: list(matchers) for event, matchers in (hooks or {}).items()}
    for event, matchers in more.items():
        merged[event] = [*merged.get(event, []), *matchers]
    return merged


def _native_output_schema(params: ModelRequestParameters) -> dict[str, Any] | None:
    if params.output_mode != "native" or params.output_object is None:
        return None
    return dict(params.output_object.json_schema)
