"""Every reach into a private name of pydantic-ai or claude-agent-sdk, in one place.

Both libraries keep things a model like this one needs behind underscored names: pydantic-ai's parts manager, its
instructions helper and its run-context variable; the SDK's session-file layout, the version of the CLI it bundles
and the CLI process of its subprocess transport. Each is wrapped here by a small function, and
``tests/test_compat.py`` exercises every one, so an upgrade that moves or renames one fails there, loudly, with
the name that broke. No other module of this package imports a private name of either library.
(One reach is an override, not an import: ``ClaudeCodeModel._run_scope()`` implements pydantic-ai's private
run-scope hook to learn when an agent run ends; ``tests/test_compat.py`` checks the hook still wraps a run.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import claude_agent_sdk
from anyio.abc import Process
from claude_agent_sdk import AssistantMessage, ClaudeSDKClient
from claude_agent_sdk._cli_version import __cli_version__ as _BUNDLED_CLI_VERSION
from claude_agent_sdk._internal import message_parser as _sdk_message_parser
from claude_agent_sdk._internal import sessions as _sdk_sessions
from pydantic_ai import _utils as _pydantic_ai_utils
from pydantic_ai._instrumentation import get_instructions
from pydantic_ai._parts_manager import ModelResponsePartsManager
from pydantic_ai._run_context import get_current_run_context
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import RunContext

__all__ = [
    "ModelResponsePartsManager",
    "api_error_fields",
    "bundled_cli_dir",
    "bundled_cli_version",
    "cli_process",
    "current_run_context",
    "keep_api_error_fields",
    "new_parts_manager",
    "now_utc",
    "request_instructions",
    "session_transcript_path",
]


# --- pydantic-ai ------------------------------------------------------------------------------------------------


def now_utc() -> datetime:
    """The current time, as pydantic-ai stamps its responses."""
    return _pydantic_ai_utils.now_utc()


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


def bundled_cli_dir() -> Path:
    """The folder where the claude-agent-sdk wheel keeps the CLI it bundles (it may hold none)."""
    return Path(claude_agent_sdk.__file__).parent / "_bundled"


def bundled_cli_version() -> str:
    """The version of the CLI bundled with the installed claude-agent-sdk, known without running it."""
    return _BUNDLED_CLI_VERSION


def session_transcript_path(session_id: str, *, env: Mapping[str, str], cwd: str) -> Path:
    """Where the CLI keeps the transcript of ``session_id`` for this environment's config dir and ``cwd``."""
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
