"""A new process's first CLI, started before claude-agent-sdk is imported.

The first request of a process pays for importing claude-agent-sdk (and the ``mcp`` package it imports: 0.5-1.2 s)
and for the CLI's own start (about half a second, in another process) — one after the other, as the SDK builds the
CLI's command line. Here the command line and environment the SDK will use are predicted without the SDK, from the
same inputs the options are built from, and the CLI is started with them first; the SDK is imported while it
boots. When the session's transport (:mod:`claudecode_model._sessions.transport`) then starts its CLI, it is handed
this process if (and only if) its command line, environment, working directory and pipes are exactly what the SDK
asks for (:func:`adopt_early_cli`); any difference kills it and the transport starts its own (logged at DEBUG).
So a wrong prediction costs a process start, never a different CLI.

Only the common case is predicted: a new conversation (no earlier response in the history), the in-process tool
transport, and settings whose effect on the command line is known here; anything else starts the CLI the usual way.
The prediction reads the same table of settings (:mod:`~claudecode_model._sessions.setting_table`: which settings
are predicted, the options each sets alone) and the same environment rules (``request_env()``) as
``_sessions.options.build_options()``, and repeats what ``_turns.acquire.spawn_session()`` and the SDK's transport
(``SubprocessCLITransport._build_command()`` and ``connect()``) do for that case; ``tests/model/test_early_cli_cli.py``
runs each supported input through both and fails when they part.

The early CLI gets what every CLI this package starts gets: the launcher that kills it with this process, a session
of its own, and its private ``CLAUDE_CODE_TMPDIR`` and tag (reserved for the session that adopts it, see
:mod:`claudecode_model._process.temp`).
It is stopped when its request fails, is cancelled or did not adopt it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from contextvars import Token
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE
from typing import Any, Protocol, cast

import anyio
from anyio.abc import Process
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from claudecode_model._compat import load_sdk, request_instructions, sdk_version
from claudecode_model._history.cut_results import RESULT_READER_SERVER
from claudecode_model._history.plan import system_prompt_of
from claudecode_model._process.binary import SDK_SERVER_MINIMUM_CLI, cli_version
from claudecode_model._process.oscalls import CLI_TAG_VARIABLE, own_session_options, signal_group
from claudecode_model._process.platform import guarded_cli_path
from claudecode_model._process.prompt_file import INLINE_SYSTEM_PROMPT_BYTES
from claudecode_model._process.temp import ReservedTemp, end_reservation, reserve_cli_temp
from claudecode_model._sessions.setting_table import PREDICTED, SESSION_STATE_ENV, SETTINGS, direct_options, request_env
from claudecode_model._sessions.trace_context import traceparent_env, untraced_context
from claudecode_model._tools.execution import DEFAULT_PERMISSION_MODE, DEFAULT_SERVER_NAME, TransportType

__all__ = ["EarlyCLI", "Launch", "ModelFacts", "Prediction", "adopt_early_cli", "predict_launch", "start_early_cli"]

logger = logging.getLogger(__name__)

_DERIVED_CLIENT_APP_ENV = "CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP"

_UNREAD_STANDARD_SETTINGS = frozenset(ModelSettings.__annotations__) - SETTINGS.keys()
"""pydantic-ai's own settings the model does not read: they change nothing here."""


class ModelFacts(Protocol):
    """What the prediction needs of a model (its ``ModelResources``)."""

    @property
    def model_name(self) -> str | None: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def transport(self) -> TransportType: ...
    @property
    def session_store(self) -> object | None: ...
    @property
    def cli_path(self) -> Path: ...
    @property
    def tools_registered(self) -> bool: ...


@dataclass(frozen=True)
class Launch:
    """How the SDK will start a request's CLI: the ``anyio.open_process`` arguments."""

    command: list[str]
    env: dict[str, str]
    cwd: str | None

    def keywords(self) -> dict[str, Any]:
        """The keywords of ``anyio.open_process`` the SDK passes."""
        return {"stdin": PIPE, "stdout": PIPE, "stderr": PIPE, "cwd": self.cwd, "env": self.env, "user": None}

    def difference(self, command: Sequence[str], keywords: Mapping[str, Any]) -> str | None:
        """What differs from the SDK's ``command`` and ``keywords`` (``None``: nothing; both without the session of
        its own every CLI gets, see :mod:`claudecode_model._sessions.transport`).

        A ``TRACEPARENT`` of a span that is not sampled counts as equal to another one: the SDK gives each CLI the
        placeholder span of its session task, a random one (the CLI's telemetry joins no trace either way)."""
        if list(command) != self.command:
            return _first_difference("command line", self.command, list(command))
        expected = {**self.keywords(), "env": _placeholders_alike(self.env)}
        actual = {**keywords, "env": _placeholders_alike(cast("Mapping[str, str]", keywords.get("env") or {}))}
        if actual.keys() != expected.keys():
            return f"open_process keywords {sorted(actual)} instead of {sorted(expected)}"
        for key in expected:
            if actual[key] != expected[key]:
                if key == "env":
                    changed = sorted(
                        name
                        for name in expected["env"].keys() | actual["env"].keys()
                        if expected["env"].get(name) != actual["env"].get(name)
                    )
                    return f"environment variables {changed}"
                return f"{key} {actual[key]!r} instead of {expected[key]!r}"
        return None


@dataclass(frozen=True)
class Prediction:
    """The CLI options of a request, as far as they decide how its CLI is started."""

    command: list[str]
    options_env: dict[str, str]
    """The options' ``env`` before a new process's own values (its temp folder, ``TRACEPARENT``)."""
    cwd: str | None

    def launch(self, process_env: Mapping[str, str]) -> Launch:
        """How the SDK starts the CLI when a new process adds ``process_env`` to the options' ``env``."""
        return Launch(self.command, _process_env({**self.options_env, **process_env}, self.cwd), self.cwd)


def _first_difference(what: str, expected: list[str], actual: list[str]) -> str:
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return f"{what} argument {index}: {got!r} instead of {want!r}"
    return f"{what} of {len(actual)} arguments instead of {len(expected)}"


def _placeholders_alike(env: Mapping[str, str]) -> dict[str, str]:
    parent = env.get("TRACEPARENT")
    if parent is None or not parent.endswith("-00"):
        return dict(env)
    return {**env, "TRACEPARENT": "not sampled"}


def predict_launch(
    resources: ModelFacts,
    messages: Sequence[ModelMessage],
    settings: Mapping[str, Any],
    params: ModelRequestParameters,
) -> tuple[Prediction | None, str]:
    """The options that decide how the SDK will start this request's CLI, if it is a case predicted here; else
    ``None`` and why."""
    if resources.session_store is not None:
        return None, "the model has a session store"
    if resources.tools_registered:
        return None, "the model serves registered toolsets"
    unknown = sorted(set(settings) - PREDICTED - _UNREAD_STANDARD_SETTINGS)
    if unknown:
        return None, f"settings {unknown} are not predicted"
    if any(isinstance(message, ModelResponse) for message in messages):
        return None, "the history has responses (resume or replay)"
    if params.native_tools or params.thinking is not None:
        return None, "native tools or thinking"
    tools = [*params.function_tools, *params.output_tools]
    if any(tool.metadata for tool in params.function_tools):
        return None, "tools with metadata (built-in tool approvals)"
    cli_path = resources.cli_path
    if tools and resources.transport != "sdk":
        version = cli_version(cli_path) if resources.transport == "auto" else None
        if resources.transport == "stdio" or (version is not None and version < SDK_SERVER_MINIMUM_CLI):
            return None, "the stdio tool transport"

    system_prompt = _system_prompt(messages, request_instructions(list(messages), params), settings)
    if len(system_prompt.encode("utf-8", errors="surrogatepass")) > INLINE_SYSTEM_PROMPT_BYTES:
        return None, "a system prompt passed in a file"  # not predicted

    options_env = request_env(settings, resources.env, cache=params.cache, serves_tools=bool(tools))
    direct = direct_options(settings)
    cwd_text = direct["cwd"]

    command = [str(guarded_cli_path(cli_path)), "--output-format", "stream-json", "--verbose"]
    command += ["--system-prompt", system_prompt, "--tools", ""]
    # A session serving the agent's tools also serves the reader of cut results (in process, listed when needed).
    served = [DEFAULT_SERVER_NAME, RESULT_READER_SERVER] if tools else []
    allowed = [*(f"mcp__{name}" for name in served), *settings.get("claude_code_allowed_tools", [])]
    if allowed:
        command += ["--allowedTools", ",".join(allowed)]
    if max_turns := direct["max_turns"]:
        command += ["--max-turns", str(max_turns)]
    if disallowed := direct["disallowed_tools"]:
        command += ["--disallowedTools", ",".join(disallowed)]
    if resources.model_name:
        command += ["--model", resources.model_name]
    if permission_mode := settings.get("claude_code_permission_mode", DEFAULT_PERMISSION_MODE):
        command += ["--permission-mode", str(permission_mode)]
    if tools:
        servers = {name: {"type": "sdk", "name": name} for name in served}
        command += ["--mcp-config", json.dumps({"mcpServers": servers})]
    command += ["--include-partial-messages", "--strict-mcp-config"]
    command.append(f"--setting-sources={','.join(direct['setting_sources'])}")
    for flag, value in direct["extra_args"].items():
        if value is None:
            command.append(f"--{flag}")
        elif str(value).startswith("-"):
            command.append(f"--{flag}={value}")
        else:
            command += [f"--{flag}", str(value)]
    if params.output_mode == "native" and params.output_object is not None:
        command += ["--json-schema", json.dumps(dict(params.output_object.json_schema))]
    command += ["--input-format", "stream-json"]
    return Prediction(command, options_env, cwd_text), "predicted"


def _system_prompt(messages: Sequence[ModelMessage], instructions: str | None, settings: Mapping[str, Any]) -> str:
    """The CLI's system prompt (what ``_sessions.options.effective_system_prompt()`` makes of the plan's)."""
    prompt = system_prompt_of(messages, instructions)
    if append := settings.get("claude_code_system_prompt_append"):
        prompt = f"{prompt}\n\n{append}" if prompt else append
    return prompt or ""


def _process_env(options_env: Mapping[str, str], cwd: str | None) -> dict[str, str]:
    """The environment the SDK's ``connect()`` gives a CLI whose options carry ``options_env`` (run in the context
    of the session's owner task: a fresh one with a placeholder span)."""
    env = {key: value for key, value in os.environ.items() if key != "CLAUDECODE"}
    env = {**env, "CLAUDE_CODE_ENTRYPOINT": "sdk-py", **options_env, "CLAUDE_AGENT_SDK_VERSION": sdk_version()}
    env.pop(_DERIVED_CLIENT_APP_ENV, None)
    carrier: dict[str, str] = {}
    untraced_context().run(_inject_trace_context, carrier)
    if "traceparent" in carrier:
        for key in ("TRACEPARENT", "TRACESTATE"):
            if key not in options_env:
                env.pop(key, None)
        for key, value in carrier.items():
            if key.upper() not in options_env:
                env[key.upper()] = value
    if not any(key.upper() == SESSION_STATE_ENV for key in env):
        env[SESSION_STATE_ENV] = "1"
    if cwd:
        env["PWD"] = cwd
    return env


def _inject_trace_context(carrier: dict[str, str]) -> None:
    from opentelemetry import propagate

    propagate.inject(carrier)


class EarlyCLI:
    """A CLI started for a request before claude-agent-sdk was imported, until a session adopts it or it is
    stopped (:meth:`settle`)."""

    def __init__(self, launch: Launch, process: Process, temp: ReservedTemp, token: Token[ReservedTemp | None]) -> None:
        self.launch = launch
        self.process = process
        self.started = time.monotonic()
        self.outcome: str | None = None
        """``"adopted"``, or why it was not (``None``: undecided)."""
        self._temp = temp
        self._token: Token[ReservedTemp | None] | None = token
        self._loop = asyncio.get_running_loop()

    def _offered(self, command: Sequence[str], keywords: Mapping[str, Any]) -> Process | None:
        """The SDK is about to start a CLI with ``command`` and ``keywords``: this process if they are exactly its
        own; a different start of the session it was started for (its tag) stops it."""
        difference = self.launch.difference(command, keywords)
        if difference is None:
            self.outcome = "adopted"
            logger.debug(
                "the session adopted the CLI started %.2f s earlier (pid %s)",
                time.monotonic() - self.started,
                self.process.pid,
            )
            return self.process
        env = cast("Mapping[str, str]", keywords.get("env") or {})
        own_tag = self._temp.env.get(CLI_TAG_VARIABLE)
        if own_tag is not None and env.get(CLI_TAG_VARIABLE) == own_tag:
            self._stop(f"the session's CLI differs from the prediction: {difference}")
        return None

    def _stop(self, why: str) -> None:
        if self.outcome is None:
            self.outcome = why
            logger.debug("stopping the CLI started early (pid %s): %s", self.process.pid, why)
        if self.process.returncode is None:  # a signal of our own: the process's kill() polls it, racing the watcher
            signal_group(self.process.pid, force=True)

    async def settle(self) -> None:
        """The request's start is over: stop the process unless a session adopted it, remove its temp folder
        unless a session took it, and end the reservation."""
        if _PENDING.get(self._loop) is self:
            del _PENDING[self._loop]
        if self._token is not None:
            with contextlib.suppress(ValueError):  # ended in another context: nothing to restore
                end_reservation(self._token)
            self._token = None
        if self.outcome == "adopted":
            return
        self._stop("no session of the request started a CLI with the predicted command line and environment")
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.process.aclose()
        finally:
            if not self._temp.taken:
                self._temp.remove()


_PENDING: dict[asyncio.AbstractEventLoop, EarlyCLI] = {}
"""The early CLI of each event loop that waits for its session (one at a time)."""


def adopt_early_cli(command: Sequence[str], keywords: Mapping[str, Any]) -> Process | None:
    """The early CLI of this event loop if it was started with exactly ``command`` and the ``anyio.open_process``
    ``keywords`` the SDK's transport is about to start a session's CLI with (it is then the session's); ``None``
    otherwise (and a different start of the session it was started for stops it)."""
    early = _PENDING.get(asyncio.get_running_loop())
    if early is None or early.outcome is not None:
        return None
    return early._offered(command, keywords)


def _sdk_imported() -> bool:
    return "claude_agent_sdk" in sys.modules


def _usable_cpus() -> int:
    """The CPUs this process may run on (the CLI's start overlaps the SDK's import only with a second one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


async def start_early_cli(
    resources: ModelFacts,
    messages: Sequence[ModelMessage],
    settings: Mapping[str, Any] | None,
    params: ModelRequestParameters,
) -> EarlyCLI | None:
    """Start the CLI of a process's first request before importing claude-agent-sdk (then import it), if the
    request is a case predicted here; ``None`` otherwise (the SDK is imported already, another request of this
    loop has an early CLI, the process has one CPU (the CLI's start would only compete with the import), or the case
    is not predicted)."""
    loop = asyncio.get_running_loop()
    if _sdk_imported() or loop in _PENDING:
        return None
    if _usable_cpus() < 2:
        logger.debug("the first CLI starts after the SDK's import: one CPU, nothing to overlap")
        return None
    try:
        prediction, why = predict_launch(resources, messages, settings or {}, params)
    except Exception as error:  # the request's own path reports what is wrong with its input
        prediction, why = None, f"the prediction failed ({error!r})"
    if prediction is None:
        logger.debug("the first CLI starts after the SDK's import: %s", why)
        return None
    # What _turns.acquire.spawn_session() adds for a new process: its private temp folder, the request's trace context.
    temp, token = reserve_cli_temp(prediction.options_env)
    launch = prediction.launch({**temp.env, **traceparent_env()})
    try:
        process = await anyio.open_process(launch.command, **launch.keywords(), **own_session_options())
    except BaseException as error:
        end_reservation(token)
        temp.remove()
        if not isinstance(error, Exception):
            raise
        logger.debug("the early CLI did not start (%r): the session starts its own", error)
        return None
    early = EarlyCLI(launch, process, temp, token)
    _PENDING[loop] = early
    logger.debug("CLI started before the SDK's import (pid %s)", process.pid)
    try:
        load_sdk()  # while the CLI starts
    except BaseException:
        await early.settle()
        raise
    return early
