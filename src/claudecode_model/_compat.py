"""Every reach into a private name of pydantic-ai or claude-agent-sdk, in one place.

Both libraries keep things a model like this one needs behind underscored names: pydantic-ai's parts manager, its
instructions helper and its run-context variable; the SDK's session-file layout, the version of the CLI it bundles
the CLI process of its subprocess transport, the start of that process (the code of its ``connect()`` run with
another ``open_process``) and the resume from a session store its client does for the transport it builds itself.
Each is wrapped here by a small function, and
``tests/test_compat.py`` exercises every one, so an upgrade that moves or renames one fails there, loudly, with
the name that broke. No other module of this package imports a private name of either library.
claude-agent-sdk (and the ``mcp`` package it imports, about a second) is imported only by the functions that need
it, so that the path of a new process's first request up to the CLI's start does not wait for it.
Nothing here changes either library at import: the one change to the SDK (:func:`keep_api_error_fields`) is
installed at the first session start.
(One reach is an override, not an import: ``ClaudeCodeModel._run_scope()`` implements pydantic-ai's private
run-scope hook to learn when an agent run ends; ``tests/test_compat.py`` checks the hook still wraps a run.)
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from functools import cache
from pathlib import Path
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from anyio.abc import Process
from pydantic_ai import _utils as _pydantic_ai_utils
from pydantic_ai._instrumentation import get_instructions
from pydantic_ai._parts_manager import ModelResponsePartsManager
from pydantic_ai._run_context import get_current_run_context
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import RunContext

if TYPE_CHECKING:
    from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient, Transport

__all__ = [
    "ModelResponsePartsManager",
    "Spawn",
    "add_sdk_mcp_server",
    "api_error_fields",
    "bundled_cli_dir",
    "bundled_cli_version",
    "close_process_pipes",
    "current_run_context",
    "forcing_allowed",
    "guarantee_settings",
    "keep_api_error_fields",
    "load_sdk",
    "new_parts_manager",
    "now_utc",
    "options_resumed_from_store",
    "request_instructions",
    "resolve_tool_choice",
    "sdk_cli_command",
    "sdk_version",
    "send_control_request",
    "session_transcript_path",
    "subprocess_transport",
    "transport_process",
]


# --- pydantic-ai ------------------------------------------------------------------------------------------------


def now_utc() -> datetime:
    """The current time, as pydantic-ai stamps its responses."""
    return _pydantic_ai_utils.now_utc()


def resolve_tool_choice(settings: Mapping[str, Any] | None, params: ModelRequestParameters) -> Any:
    """pydantic-ai's canonical form of the ``tool_choice`` setting for a request: ``'none'``, ``'auto'``,
    ``'required'``, or ``(mode, allowed tool names)``."""
    from pydantic_ai.models._tool_choice import resolve_tool_choice as resolve

    return resolve(settings, params)  # type: ignore[arg-type]


def forcing_allowed(model_name: str, settings: Mapping[str, Any] | None, reason: str | None) -> bool:
    """pydantic-ai's rule for a forced tool choice a model cannot send: an explicit forcing ``tool_choice`` raises a
    ``UserError`` (with ``reason``), a forced choice pydantic-ai resolved itself falls back (``False``)."""
    from pydantic_ai.models._tool_choice import FORCING_UNSUPPORTED_REASON, support_tool_forcing

    return support_tool_forcing(model_name, settings, reason or FORCING_UNSUPPORTED_REASON)  # type: ignore[arg-type]


def guarantee_settings() -> frozenset[str]:
    """The standard settings pydantic-ai itself warns about when a model ignores them (the others it ignores
    silently)."""
    from pydantic_ai._unsupported_settings import GUARANTEE_SETTINGS

    return frozenset(GUARANTEE_SETTINGS)


def request_instructions(messages: Sequence[ModelMessage], params: ModelRequestParameters) -> str | None:
    """The instructions in force for this request, joined as pydantic-ai's own models send them."""
    return get_instructions(messages, params)


def new_parts_manager(params: ModelRequestParameters) -> ModelResponsePartsManager:
    """A parts manager for a response built outside a ``StreamedResponse`` (raw message streaming)."""
    return ModelResponsePartsManager(model_request_parameters=params)


def current_run_context() -> RunContext[Any] | None:
    """The run context of the agent run in progress on this task, if any.

    ``Model.request()`` receives no ``RunContext``; inside an agent run it is still reachable through the context
    variable pydantic-ai sets.
    """
    context = get_current_run_context()
    return context if isinstance(context, RunContext) else None


# --- claude-agent-sdk -------------------------------------------------------------------------------------------


@cache
def _sdk_dir() -> Path:
    """The installed claude-agent-sdk package's folder, found without importing it."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("claude-agent-sdk is not installed", name="claude_agent_sdk")
    return Path(spec.origin).parent


def _sdk_constant(module: str, name: str) -> str:
    """A string constant of the SDK module ``module`` (``_version``, ``_cli_version``): from the module if it is
    imported, else read from its source without importing the package."""
    loaded = sys.modules.get(f"claude_agent_sdk.{module}")
    if loaded is not None:
        return str(getattr(loaded, name))
    tree = ast.parse((_sdk_dir() / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise LookupError(f"claude_agent_sdk.{module} defines no {name}")


def bundled_cli_dir() -> Path:
    """The folder where the claude-agent-sdk wheel keeps the CLI it bundles (it may hold none)."""
    return _sdk_dir() / "_bundled"


@cache
def bundled_cli_version() -> str:
    """The version of the CLI bundled with the installed claude-agent-sdk, known without running it (or importing
    the SDK)."""
    return _sdk_constant("_cli_version", "__cli_version__")


@cache
def sdk_version() -> str:
    """The installed claude-agent-sdk's version, as it tells the CLI (``CLAUDE_AGENT_SDK_VERSION``), known without
    importing it."""
    return _sdk_constant("_version", "__version__")


def session_transcript_path(session_id: str, *, env: Mapping[str, str], cwd: str) -> Path:
    """Where the CLI keeps the transcript of ``session_id`` for this environment's config dir and ``cwd``."""
    from claude_agent_sdk._internal import sessions as _sdk_sessions

    project = _sdk_sessions._canonicalize_path(cwd)
    projects_dir = _sdk_sessions._get_projects_dir(dict(env))
    return projects_dir / _sdk_sessions._sanitize_path(project) / f"{session_id}.jsonl"


def transport_process(transport: object) -> Process | None:
    """The CLI process of an SDK subprocess transport (``None`` before it started, and for other transports)."""
    process = getattr(transport, "_process", None)
    return process if isinstance(process, Process) else None


_API_ERROR_KEYS = ("api_error_status", "api_error_type", "api_error_code", "request_id")
_API_ERROR_ATTRIBUTE = "_claudecode_api_error"


def keep_api_error_fields() -> None:
    """Have the SDK's message parser keep what the CLI says about a failed API request on the ``AssistantMessage``
    that reports it: the API's error ``type``, its ``details.error_code`` and the request id, which the parser
    drops (read them with :func:`api_error_fields`). Installed once; other messages are left as they were."""
    from claude_agent_sdk import AssistantMessage
    from claude_agent_sdk._internal import message_parser as _sdk_message_parser

    original = _sdk_message_parser.parse_message
    if getattr(original, "keeps_api_errors", False):
        return

    def parse_message(data: dict[str, Any]) -> Any:
        message = original(data)
        if isinstance(message, AssistantMessage) and isinstance(data, dict) and data.get("is_api_error_message"):
            message.__dict__[_API_ERROR_ATTRIBUTE] = {key: data[key] for key in _API_ERROR_KEYS if key in data}
        return message

    parse_message.keeps_api_errors = True  # type: ignore[attr-defined]
    # ClaudeSDKClient imports the parser from its module at each turn.
    _sdk_message_parser.parse_message = parse_message


def api_error_fields(message: AssistantMessage) -> dict[str, Any]:
    """The CLI's ``api_error_*`` and ``request_id`` fields of an API error message (empty for other messages)."""
    return dict(message.__dict__.get(_API_ERROR_ATTRIBUTE, {}))


def close_process_pipes(process: Process) -> None:
    """Close the pipes of a stopped CLI process that its transport left open.

    The SDK's ``close()`` never closes the process's stdout; asyncio closes it when it reads its end, which never
    comes when reading stopped early (a message over the read limit): the CLI blocks writing to the full pipe, is
    killed and reaped outside asyncio, and the pipe stays open until the process object is collected (after its
    event loop closed, with a warning). Called once asyncio has reported the exit of a process that ended: this
    polls a process with no exit code yet, which may reap it before asyncio's child watcher does.
    """
    asyncio_process = getattr(process, "_process", None)
    transport = getattr(asyncio_process, "_transport", None)
    if transport is not None:
        transport.close()  # kills the process if it still runs (the session is over either way)


def process_stdin_fd(process: Process) -> int | None:
    """The file descriptor of the write end of ``process``'s standard input (an ``anyio.open_process`` process on
    asyncio with a piped input), or ``None`` if it has none (or anyio keeps it some other way)."""
    writer = getattr(process.stdin, "_stream", None)  # anyio's StreamWriterWrapper around an asyncio StreamWriter
    transport = getattr(writer, "transport", None)
    pipe = transport.get_extra_info("pipe") if transport is not None else None
    try:
        fd = pipe.fileno() if pipe is not None else None
    except (OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


Spawn = Callable[[Sequence[str], Mapping[str, Any]], Awaitable[Process]]
"""Starts the CLI for the SDK's subprocess transport, given the command line and the ``anyio.open_process``
keywords the SDK chose (or hands it a process already running with exactly those)."""

_SPAWN: ContextVar[Spawn | None] = ContextVar("claudecode_model_spawn", default=None)


class _AnyioSpawning(ModuleType):
    """What the code of the SDK's ``connect()`` sees as ``anyio`` in :func:`subprocess_transport`: anyio itself,
    except that ``open_process`` is the :data:`Spawn` of the transport connecting on this task."""

    def __init__(self, anyio: ModuleType) -> None:
        super().__init__(anyio.__name__, anyio.__doc__)
        self._anyio = anyio

    def __getattr__(self, name: str) -> Any:
        return getattr(self._anyio, name)

    async def open_process(self, command: Sequence[str], **kwargs: Any) -> Process:
        spawn = _SPAWN.get()
        if spawn is None:
            process: Process = await self._anyio.open_process(command, **kwargs)
            return process
        return await spawn(command, kwargs)


@cache
def _spawning_transport_class() -> Callable[..., Transport]:
    """A ``SubprocessCLITransport`` whose ``connect()`` is the SDK's own code, run with the module globals of its
    module except ``anyio`` (see :class:`_AnyioSpawning`): the SDK's module is left as it is."""
    from claude_agent_sdk._internal.transport import subprocess_cli

    sdk_connect = subprocess_cli.SubprocessCLITransport.connect
    connect_code = FunctionType(
        sdk_connect.__code__,
        {**vars(subprocess_cli), "anyio": _AnyioSpawning(vars(subprocess_cli)["anyio"])},
        sdk_connect.__name__,
        sdk_connect.__defaults__,
        sdk_connect.__closure__,
    )

    class SpawningTransport(subprocess_cli.SubprocessCLITransport):
        def __init__(self, *, options: ClaudeAgentOptions, spawn: Spawn, inline_schema_limit: int | None) -> None:
            super().__init__(prompt=_no_prompt(), options=options)
            self._claudecode_spawn = spawn
            self._claudecode_large_schema = _large_schema(options, inline_schema_limit)

        def _build_command(self) -> list[str]:
            command: list[str] = super()._build_command()
            if self._claudecode_large_schema is not None:
                at = command.index("--json-schema")
                del command[at : at + 2]
            return command

        async def connect(self) -> None:
            token = _SPAWN.set(self._claudecode_spawn)
            try:
                await connect_code(self)
            finally:
                _SPAWN.reset(token)

        async def write(self, data: str) -> None:
            schema = self._claudecode_large_schema
            if schema is not None and '"initialize"' in data:
                data = _with_schema_at_initialize(data, schema)
            await super().write(data)

    return SpawningTransport


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    return
    yield


def subprocess_transport(
    options: ClaudeAgentOptions, spawn: Spawn, *, inline_schema_limit: int | None = None
) -> Transport:
    """The SDK's subprocess transport for ``options``, configured as ``ClaudeSDKClient`` configures the one it builds
    itself (``can_use_tool`` routed over stdio), whose CLI is started by ``spawn``: the SDK builds the command line,
    environment and streams as always, ``spawn`` starts the process (or adopts one). An output schema whose JSON is
    longer than ``inline_schema_limit`` characters leaves the command line (``--json-schema``) and reaches the CLI in
    its ``initialize`` request (``jsonSchema``, as the TypeScript SDK sends it); ``None``: none does."""
    from claude_agent_sdk.types import _configure_can_use_tool

    transport_class = _spawning_transport_class()
    return transport_class(
        options=_configure_can_use_tool(options), spawn=spawn, inline_schema_limit=inline_schema_limit
    )


def load_sdk() -> None:
    """Import claude-agent-sdk and the modules a session's start needs (about a second, the first time)."""
    _spawning_transport_class()
    from claude_agent_sdk import ClaudeSDKClient  # noqa: F401


async def options_resumed_from_store(
    options: ClaudeAgentOptions,
) -> tuple[ClaudeAgentOptions, Callable[[], Awaitable[None]]]:
    """``options`` with a resume from their session store written to a private config folder, as
    ``ClaudeSDKClient.connect()`` does when it builds its own transport (it skips this for a transport it is given),
    and the coroutine function that removes the folder once the CLI is gone. Unchanged without a store or resume."""
    from claude_agent_sdk._internal.session_resume import apply_materialized_options, materialize_resume_session

    materialized = await materialize_resume_session(options)
    if materialized is None:
        return options, _nothing_to_remove
    return apply_materialized_options(options, materialized), materialized.cleanup


async def _nothing_to_remove() -> None:
    return None


async def send_control_request(client: ClaudeSDKClient, request: dict[str, Any], *, seconds: float) -> dict[str, Any]:
    """Send the CLI a control request the client has no method for (``claim_session``) and return its response;
    the CLI's refusal raises the SDK's exception with the CLI's message, no answer within ``seconds`` another."""
    query = client._query  # private: the client's control channel, set by connect()
    if query is None:
        raise RuntimeError("the SDK client is not connected")
    response: dict[str, Any] = await query._send_control_request(request, timeout=seconds)  # private: a round trip
    return response


def add_sdk_mcp_server(client: ClaudeSDKClient, name: str, instance: Any) -> None:
    """Let a connected client answer the CLI's MCP messages for the in-process server ``name`` (``instance``, an
    ``mcp`` low-level server), as it does for those of the options it connected with: a parked CLI connects the
    servers of its claim after the start. A server it already answers for is left as it is (its MCP session goes on).
    """
    from claude_agent_sdk._internal.sdk_mcp_bridge import SdkMcpBridge

    query = client._query  # private: the client's control channel, set by connect()
    if query is None:
        raise RuntimeError("the SDK client is not connected")
    if query.sdk_mcp_servers.get(name) is instance:
        return
    query.sdk_mcp_servers[name] = instance
    query._sdk_mcp_bridges[name] = SdkMcpBridge(name, instance)  # private: the bridges that route MCP messages


def sdk_cli_command(options: ClaudeAgentOptions, *, inline_schema_limit: int | None = None) -> list[str]:
    """The command line the transport of :func:`subprocess_transport` starts the CLI with for ``options`` (``None``:
    every output schema on the command line, as the SDK's own transport does)."""
    transport = _spawning_transport_class()(options=options, spawn=_no_spawn, inline_schema_limit=inline_schema_limit)
    command: list[str] = transport._build_command()  # type: ignore[attr-defined]
    return command


async def _no_spawn(command: Sequence[str], keywords: Mapping[str, Any]) -> Process:
    raise RuntimeError("a transport made only for its command line is never connected")


def _with_schema_at_initialize(line: str, schema: Any) -> str:
    """The control line ``line`` with ``schema`` as its ``jsonSchema`` if it is the ``initialize`` request."""
    import json

    message = json.loads(line)
    if not isinstance(message, dict) or message.get("type") != "control_request":
        return line
    request = message.get("request")
    if not isinstance(request, dict):
        return line
    if request.get("subtype") != "initialize":
        return line
    message["request"] = {**request, "jsonSchema": schema}
    return json.dumps(message) + "\n"


def _large_schema(options: ClaudeAgentOptions, limit: int | None) -> Any:
    """The output schema of ``options`` if its JSON is longer than ``limit`` characters (else ``None``; always with
    no limit)."""
    import json

    if limit is None:
        return None
    output_format = getattr(options, "output_format", None)
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        return None
    schema = output_format.get("schema")
    return schema if schema is not None and len(json.dumps(schema)) > limit else None
