"""Every reach into a private name of pydantic-ai or claude-agent-sdk, in one place.

Both libraries keep things a model like this one needs behind underscored names: pydantic-ai's parts manager, its
instructions helper and its run-context variable; the SDK's session-file layout, the version of the CLI it bundles
and the CLI process of its subprocess transport. Each is wrapped here by a small function, and
``tests/test_compat.py`` exercises every one, so an upgrade that moves or renames one fails there, loudly, with
the name that broke. No other module of this package imports a private name of either library.
claude-agent-sdk (and the ``mcp`` package it imports, about a second) is imported only by the functions that need
it, so that the path of a new process's first request up to the CLI's start does not wait for it.
(One reach is an override, not an import: ``ClaudeCodeModel._run_scope()`` implements pydantic-ai's private
run-scope hook to learn when an agent run ends; ``tests/test_compat.py`` checks the hook still wraps a run.)
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from types import ModuleType
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
    from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient

__all__ = [
    "ModelResponsePartsManager",
    "adopt_cli_spawns",
    "api_error_fields",
    "bundled_cli_dir",
    "bundled_cli_version",
    "cli_process",
    "current_run_context",
    "forcing_allowed",
    "guarantee_settings",
    "keep_api_error_fields",
    "new_parts_manager",
    "now_utc",
    "request_instructions",
    "resolve_tool_choice",
    "sdk_cli_command",
    "sdk_version",
    "send_large_schemas_at_initialize",
    "session_transcript_path",
    "spawn_clis_with",
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


def cli_process(client: ClaudeSDKClient) -> Process | None:
    """The CLI process of a connected client's subprocess transport (``None`` for other transports)."""
    transport = getattr(client, "_transport", None)
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
    event loop closed, with a warning).
    """
    asyncio_process = getattr(process, "_process", None)
    transport = getattr(asyncio_process, "_transport", None)
    if transport is not None:
        transport.close()  # kills the process if it still runs (the session is over either way)


SpawnFinder = Callable[[Sequence[str], Mapping[str, Any]], Awaitable["Process | None"]]
"""Given the command line and the ``anyio.open_process`` keywords of a CLI the SDK is about to start: a process
already running with exactly those (the SDK then uses it), or ``None`` (the SDK starts one)."""


async def _nothing_found(command: Sequence[str], keywords: Mapping[str, Any]) -> Process | None:
    return None


class _AnyioForCLIs(ModuleType):
    """What the SDK's subprocess transport sees as ``anyio``: anyio itself, except that ``open_process`` first asks
    the installed :data:`SpawnFinder` for a process already running with the same command line and keywords, and
    otherwise starts the CLI with the extra keywords installed."""

    def __init__(self, anyio: ModuleType) -> None:
        super().__init__(anyio.__name__, anyio.__doc__)
        self._anyio = anyio
        self._find: SpawnFinder = _nothing_found
        self._extra: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._anyio, name)

    async def open_process(self, command: Sequence[str], **kwargs: Any) -> Process:
        found = await self._find(command, kwargs)
        if found is not None:
            return found
        process: Process = await self._anyio.open_process(command, **kwargs, **self._extra)
        return process


def _cli_spawns() -> _AnyioForCLIs:
    from claude_agent_sdk._internal.transport import subprocess_cli

    current = vars(subprocess_cli)["anyio"]
    if isinstance(current, _AnyioForCLIs):
        return current
    installed = _AnyioForCLIs(current)
    vars(subprocess_cli)["anyio"] = installed
    return installed


def adopt_cli_spawns(find: SpawnFinder) -> None:
    """Have the SDK's subprocess transport (``SubprocessCLITransport.connect()``) take a CLI process ``find``
    returns for its command line and environment instead of starting one (installed once; a later call replaces
    ``find``). Everything else of ``connect()`` runs as it is: its command, environment, stderr reader and the
    SDK's own bookkeeping of its children."""
    _cli_spawns()._find = find


def spawn_clis_with(keywords: Mapping[str, Any]) -> None:
    """Have the SDK's subprocess transport start each CLI with these extra ``anyio.open_process`` keywords (a
    session of its own); what a :data:`SpawnFinder` is asked about stays the SDK's own keywords."""
    spawns = _cli_spawns()
    if spawns._extra != keywords:
        spawns._extra = dict(keywords)


def sdk_cli_command(options: ClaudeAgentOptions) -> list[str]:
    """The command line the SDK's subprocess transport starts the CLI with for ``options``."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    async def nothing() -> Any:
        return
        yield

    return SubprocessCLITransport(prompt=nothing(), options=options)._build_command()


def _large_schema(options: Any, limit: int) -> Any:
    """The output schema of ``options`` if its JSON is longer than ``limit`` characters (else ``None``)."""
    import json

    output_format = getattr(options, "output_format", None)
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        return None
    schema = output_format.get("schema")
    return schema if schema is not None and len(json.dumps(schema)) > limit else None


def send_large_schemas_at_initialize(limit: int) -> None:
    """Have the SDK send an output schema whose JSON is longer than ``limit`` characters in the CLI's ``initialize``
    request (its ``jsonSchema`` field, as the TypeScript SDK sends it) instead of as ``--json-schema`` on the command
    line, which Windows caps at 32,767 characters in all. Installed once; smaller schemas stay on the command line.

    Private names: ``SubprocessCLITransport._build_command`` and ``_options``, ``Query._send_control_request`` and
    ``transport``."""
    from claude_agent_sdk._internal.query import Query
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    build = SubprocessCLITransport._build_command
    if getattr(build, "large_schema_limit", None) is not None:
        build.large_schema_limit = limit  # type: ignore[attr-defined]
        return
    send = Query._send_control_request

    def _build_command(self: Any) -> list[str]:
        command: list[str] = build(self)
        if _large_schema(self._options, _build_command.large_schema_limit) is not None:  # type: ignore[attr-defined]
            at = command.index("--json-schema")
            del command[at : at + 2]
        return command

    async def _send_control_request(self: Any, request: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if request.get("subtype") == "initialize":
            options = getattr(getattr(self, "transport", None), "_options", None)
            schema = _large_schema(options, _build_command.large_schema_limit)  # type: ignore[attr-defined]
            if schema is not None:
                request = {**request, "jsonSchema": schema}
        return await send(self, request, *args, **kwargs)

    _build_command.large_schema_limit = limit  # type: ignore[attr-defined]
    SubprocessCLITransport._build_command = _build_command  # type: ignore[method-assign]
    Query._send_control_request = _send_control_request  # type: ignore[method-assign]
