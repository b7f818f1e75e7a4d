"""The ``claudecode-model`` command: ``run``, ``login``, ``doctor``, ``demo`` and ``backend``.

``demo --research`` and ``run --research`` use the Tavily research agent (the ``tavily`` extra). Heavy imports
(pydantic-ai, the SDK) happen inside the commands, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, NativeToolCallPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo
    from pydantic_ai.run import AgentRunResult

    from claudecode_model.model import ClaudeCodeModel

__all__ = ["DEMO_PROMPT", "LOGIN_COMMAND", "main", "seconds_since_process_start"]

DEMO_PROMPT = "In one sentence: what does claudecode-model do?"
LOGIN_COMMAND = "claudecode-model login"

_IMPORTED = time.monotonic()
"""When this module was imported: the command's start, where the kernel does not tell the process's."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``claudecode-model`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "verbose", False):
        _show_library_logs()
    if args.command == "login":
        return _login(args)
    if args.command == "backend":
        from claudecode_model.testing._serve import serve

        return serve(args)
    from claudecode_model.exceptions import ClaudeCodeError

    try:
        result = int(asyncio.run(args.handler(args)))
    except ClaudeCodeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return result


def _show_library_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    library = logging.getLogger("claudecode_model")
    library.addHandler(handler)
    library.setLevel(logging.DEBUG)


def _add_verbose(command: argparse.ArgumentParser) -> None:
    """The ``--verbose`` flag of the commands that run the library (its logs on stderr)."""
    command.add_argument("--verbose", action="store_true", help="show the library's logs on stderr")


def _add_research(command: argparse.ArgumentParser, help_text: str) -> None:
    """The ``--research`` flag of the commands that can run the Tavily research agent."""
    command.add_argument("--research", action="store_true", help=help_text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="claudecode-model", description="pydantic-ai agents on Claude through the Claude Code CLI."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="run one prompt with your Claude Code login",
        description="Run one prompt. The answer goes to stdout; tool calls and a final usage line go to stderr.",
    )
    run.add_argument("prompt", help="what to ask; '-' reads it from stdin")
    run.add_argument("--model", default=None, help="Claude model: sonnet, opus, a full id, or claude-code:<model>")
    run.add_argument("--instructions", default=None, help="agent instructions (system prompt)")
    run.add_argument("--offline", action="store_true", help="use the offline backend instead of your login")
    run.add_argument("--no-stream", action="store_true", help="print the answer at the end instead of streaming")
    run.add_argument(
        "--tools",
        default=None,
        metavar="NAMES",
        help="Claude Code built-in tools to enable, comma-separated (e.g. Read,Grep,Glob); none by default",
    )
    _add_verbose(run)
    _add_research(run, "research on the web with the Tavily tools (needs the 'tavily' extra and TAVILY_API_KEY)")
    run.set_defaults(handler=_run)

    login = commands.add_parser(
        "login",
        help="log in to Claude (runs the bundled Claude Code CLI's `claude auth login`)",
        description="Log in to Claude with the Claude Code CLI that claudecode-model uses (`claude auth login`).",
    )
    login.add_argument("--console", action="store_true", help="use an Anthropic Console account (API billing)")
    login.add_argument("--sso", action="store_true", help="log in with SSO")
    login.add_argument("--email", default=None, help="fill in the email address on the login page")
    login.add_argument("--cli-path", default=None, help="the Claude Code CLI to use (default: the bundled one)")
    login.set_defaults(handler=_login)

    doctor = commands.add_parser("doctor", help="check the CLI, credentials and an offline round trip")
    _add_verbose(doctor)
    doctor.add_argument("--cli-path", default=None, help="the Claude Code CLI to check (default: the one found)")
    doctor.set_defaults(handler=_doctor)

    demo = commands.add_parser("demo", help="run an agent through the real CLI against the offline backend")
    demo.add_argument("prompt", nargs="?", default=None, help="what to ask (each demo has a question of its own)")
    _add_research(demo, "run the Tavily research agent, with Tavily faked on 127.0.0.1 too (needs the 'tavily' extra)")
    demo.set_defaults(handler=_demo)

    backend = commands.add_parser(
        "backend",
        help="run the offline backend for other programs and print the environment a CLI needs (see docs/testing.md)",
        description="Run the offline backend until interrupted. It prints `export NAME=value` lines: every process "
        "with that environment (and every Claude Code CLI it starts) talks to this backend instead of the API.",
    )
    from claudecode_model.testing._serve import add_arguments

    add_arguments(backend)
    backend.set_defaults(handler=None)
    return parser


def _login(args: argparse.Namespace) -> int:
    """Run ``claude auth login`` of the CLI the library uses, with the terminal attached."""
    from claudecode_model._process.binary import find_cli
    from claudecode_model.exceptions import ClaudeCodeError

    try:
        cli = find_cli(args.cli_path)
    except ClaudeCodeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    command = [str(cli), "auth", "login"]
    command += ["--console"] if args.console else []
    command += ["--sso"] if args.sso else []
    command += ["--email", args.email] if args.email else []
    try:
        return subprocess.run(command, check=False).returncode
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        print(f"error: could not run {cli}: {error}", file=sys.stderr)
        return 1


def _demo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline backend's stand-in for Claude in the demo: a fixed, honest answer."""
    from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart

    prompts = [
        part.content
        for message in messages
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]
    asked = prompts[-1] if prompts else ""
    answer = (
        "claudecode-model lets a pydantic-ai agent run on Claude through the Claude Code CLI, "
        f"and this answer came through that CLI from the offline backend (you asked: {asked!r})."
    )
    return ModelResponse(parts=[TextPart(answer)])


@dataclass
class _RoundTrip:
    """What an offline round trip through the real CLI saw."""

    cli_path: Path
    backend_url: str
    api_requests: int
    output: str
    response: ModelResponse
    elapsed: float


async def _offline_round_trip(prompt: str, cli_path: str | None = None) -> _RoundTrip:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    from claudecode_model.model import ClaudeCodeModel
    from claudecode_model.testing import OfflineBackend

    with OfflineBackend(FunctionModel(_demo_brain)) as backend:
        model = ClaudeCodeModel(cli_path=cli_path, env=backend.cli_env())
        agent = Agent(model, instructions="Answer in one sentence.")
        started = time.perf_counter()
        try:
            result = await agent.run(prompt)
        finally:
            await model.aclose()
        return _RoundTrip(
            cli_path=model.cli_path,
            backend_url=backend.url,
            api_requests=len(backend.requests),
            output=result.output,
            response=_last_response(result.all_messages()),
            elapsed=time.perf_counter() - started,
        )


async def _demo(args: argparse.Namespace) -> int:
    if args.research:
        return await _research_demo(args)
    prompt = args.prompt or DEMO_PROMPT
    trip = await _offline_round_trip(prompt)
    print(f"Claude Code CLI: {trip.cli_path}")
    print(f"Offline backend: {trip.backend_url} ({trip.api_requests} API request(s) received)")
    print(f"Prompt: {prompt}")
    print(f"Answer: {trip.output}")
    print(_usage_line(trip.response, trip.elapsed))
    return 0


async def _research_demo(args: argparse.Namespace) -> int:
    """The research agent through the real CLI, with Claude and Tavily both faked on 127.0.0.1."""
    try:
        from claudecode_model.tavily import TavilySearchDeps, create_research_agent
        from claudecode_model.tavily._demo import RESEARCH_DEMO_PROMPT, demo_search_results, research_demo_brain
        from claudecode_model.tavily.testing import FakeTavilyServer
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    from pydantic_ai.models.function import FunctionModel

    from claudecode_model.model import ClaudeCodeModel
    from claudecode_model.testing import OfflineBackend

    prompt = args.prompt or RESEARCH_DEMO_PROMPT
    with (
        FakeTavilyServer(search_results=demo_search_results) as tavily,
        OfflineBackend(FunctionModel(research_demo_brain)) as backend,
    ):
        model = ClaudeCodeModel(env=backend.cli_env())
        deps = TavilySearchDeps(api_key=tavily.api_key, api_base_url=tavily.base_url, timeout=10.0)
        agent = create_research_agent(model, deps=deps)
        started = time.perf_counter()
        try:
            result = await agent.run(prompt)
        finally:
            await model.aclose()
        elapsed = time.perf_counter() - started
        response = _last_response(result.all_messages())
        print(f"Claude Code CLI: {model.cli_path}")
        print(f"Offline backend: {backend.url} ({len(backend.requests)} API request(s) received)")
        print(f"Tavily stand-in: {tavily.base_url} ({len(tavily.requests)} request(s) received)")
        print(f"Question: {prompt}")
        for part in _tool_calls(result.all_messages()):
            print(f"Tool call: {part.tool_name} {json.dumps(part.args_as_dict(), ensure_ascii=False)}")
        print(f"Answer:\n{result.output}")
        print(_usage_line(response, elapsed))
    return 0


def _last_response(messages: list[ModelMessage]) -> ModelResponse:
    from pydantic_ai.messages import ModelResponse

    from claudecode_model.exceptions import ClaudeCodeError

    response = messages[-1]
    if not isinstance(response, ModelResponse):
        raise ClaudeCodeError(f"the run ended with a {type(response).__name__}, not a model response")
    return response


def _tool_calls(messages: list[ModelMessage]) -> list[ToolCallPart | NativeToolCallPart]:
    """Every tool call of the run: run by pydantic-ai (``ToolCallPart``) or inside Claude Code (native)."""
    from pydantic_ai.messages import ModelResponse, NativeToolCallPart, ToolCallPart

    return [
        part
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart | NativeToolCallPart)
    ]


def _usage_line(response: ModelResponse, elapsed: float) -> str:
    usage = response.usage
    session = (response.provider_details or {}).get("session_id")
    return (
        f"Usage: {usage.input_tokens} input, {usage.output_tokens} output tokens; "
        f"cost ${usage.cost or 0:.6f} (offline list price); {elapsed:.2f} s; session {session}"
    )


async def _run(args: argparse.Namespace) -> int:
    from claudecode_model.resolve import claude_code_model_name, is_claude_code_model_id

    if args.model is not None and is_claude_code_model_id(args.model):
        args.model = claude_code_model_name(args.model)
    prompt = _prompt(args.prompt)
    if not prompt.strip():
        print("error: the prompt is empty", file=sys.stderr)
        return 2
    if args.research:
        problem = _research_problem(offline=args.offline)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 1
    from claudecode_model.model import ClaudeCodeModel

    settings: dict[str, Any] = {}
    if args.tools:
        from claudecode_model._tools.builtin_names import unknown_builtin_tools

        tools = [name.strip() for name in args.tools.split(",") if name.strip()]
        problem = unknown_builtin_tools(tools)
        if problem is not None:
            print(f"error: --tools: {problem}", file=sys.stderr)
            return 2
        settings["claude_code_builtin_tools"] = tools
    if args.offline:
        from claudecode_model.testing import OfflineBackend

        with OfflineBackend() as backend:
            model = ClaudeCodeModel(args.model, env=backend.cli_env(), settings=settings)  # type: ignore[arg-type]
            return await _run_with(args, model, prompt)
    return await _run_with(args, ClaudeCodeModel(args.model, settings=settings), prompt)  # type: ignore[arg-type]


def _prompt(argument: str) -> str:
    return sys.stdin.read() if argument == "-" else argument


def _research_problem(*, offline: bool) -> str | None:
    """Why ``run --research`` cannot start, if it cannot (checked before the CLI is started)."""
    if offline:
        return (
            "--research uses the real Tavily API, which --offline does not fake; "
            "run `claudecode-model demo --research` for a research run with both Claude and Tavily offline"
        )
    if importlib.util.find_spec("tavily") is None:
        return "--research needs the 'tavily' extra: pip install 'claudecode-model[tavily]'"
    if not os.environ.get("TAVILY_API_KEY"):
        return "--research needs a Tavily API key in TAVILY_API_KEY"
    return None


def _agent(args: argparse.Namespace, model: ClaudeCodeModel) -> Agent[Any, str]:
    """The agent of ``run``: a plain one, or with ``--research`` the Tavily research agent."""
    from pydantic_ai import Agent

    if not args.research:
        return Agent(model, instructions=args.instructions)
    from claudecode_model.tavily import RESEARCH_INSTRUCTIONS, create_research_agent

    return create_research_agent(model, instructions=args.instructions or RESEARCH_INSTRUCTIONS)


async def _run_with(args: argparse.Namespace, model: ClaudeCodeModel, prompt: str) -> int:
    agent = _agent(args, model)
    progress = _Progress(stream_text=not args.no_stream)
    started = time.perf_counter()
    try:
        result = await agent.run(prompt, event_stream_handler=progress.consume)
        elapsed, answered = time.perf_counter() - started, seconds_since_process_start()  # not stopping the CLI
    finally:
        await model.aclose()
    if args.no_stream:
        print(result.output)
    elif progress.text_printed:
        print()
    print(_run_summary(result, progress.tool_calls, elapsed, answered), file=sys.stderr)
    return 0


class _Progress:
    """Streams the answer to stdout and writes one stderr line when a tool call starts and one when it ends.

    A call of a built-in tool streams in as a part whose end pydantic-ai reports only when the next part starts,
    i.e. once the tool has run: its start line is written as soon as its arguments stop arriving
    (``ARGUMENTS_SETTLE_SECONDS`` after the last of them, or at the next event), timed from the part's start.
    """

    ARGUMENTS_SETTLE_SECONDS = 0.1

    def __init__(self, *, stream_text: bool) -> None:
        self.stream_text = stream_text
        self.text_printed = False
        self.tool_calls = 0
        self._started: dict[str, float] = {}
        self._arriving: dict[int, tuple[NativeToolCallPart, float]] = {}
        """Built-in tool calls whose arguments are still arriving, by part index, with when they started."""
        self._settle: asyncio.TimerHandle | None = None

    async def consume(self, ctx: Any, events: AsyncIterable[Any]) -> None:
        """pydantic-ai's ``event_stream_handler``: called with the events of each model request and tool round."""
        try:
            async for event in events:
                self.handle(event)
        finally:
            self._announce_arrived()

    def handle(self, event: Any) -> None:
        from pydantic_ai.messages import (
            FunctionToolCallEvent,
            FunctionToolResultEvent,
            NativeToolCallPart,
            NativeToolReturnPart,
            PartDeltaEvent,
            PartEndEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
            ToolCallPartDelta,
        )

        match event:
            case PartStartEvent(index=index, part=NativeToolCallPart() as call):
                self._announce_arrived()
                self._arriving[index] = (call, time.perf_counter())
                self._wait_for_arguments()
            case PartDeltaEvent(index=index, delta=ToolCallPartDelta() as delta) if index in self._arriving:
                call, started = self._arriving[index]
                updated = delta.apply(call)
                if isinstance(updated, NativeToolCallPart):
                    self._arriving[index] = (updated, started)
                self._wait_for_arguments()
            case PartEndEvent(index=index, part=NativeToolCallPart() as call):
                if index in self._arriving:
                    self._arriving[index] = (call, self._arriving[index][1])
                self._announce_arrived()
            case _:
                self._announce_arrived()
        match event:
            case PartStartEvent(part=TextPart(content=text)) | PartDeltaEvent(delta=TextPartDelta(content_delta=text)):
                if self.stream_text and text:
                    print(text, end="", flush=True)
                    self.text_printed = True
            case FunctionToolCallEvent(part=function_call):
                self._tool_started(
                    function_call.tool_call_id,
                    function_call.tool_name,
                    function_call.args_as_dict(),
                    time.perf_counter(),
                )
            case PartStartEvent(part=NativeToolReturnPart() as done):
                self._tool_ended(done.tool_call_id, done.tool_name, failed=done.outcome != "success")
            case FunctionToolResultEvent(part=done):
                failed = getattr(done, "outcome", "success") != "success"
                self._tool_ended(done.tool_call_id, done.tool_name, failed=failed)
            case _:
                pass

    def _wait_for_arguments(self) -> None:
        if self._settle is not None:
            self._settle.cancel()
        self._settle = asyncio.get_running_loop().call_later(self.ARGUMENTS_SETTLE_SECONDS, self._announce_arrived)

    def _announce_arrived(self) -> None:
        """Write the start lines of the built-in tool calls whose arguments have arrived."""
        if self._settle is not None:
            self._settle.cancel()
            self._settle = None
        arrived, self._arriving = list(self._arriving.values()), {}
        for call, started in arrived:
            self._tool_started(call.tool_call_id, call.tool_name, call.args_as_dict(), started)

    def _tool_started(self, call_id: str, name: str, arguments: dict[str, Any], started: float) -> None:
        self._started[call_id] = started
        self.tool_calls += 1
        shown = json.dumps(arguments, ensure_ascii=False)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        self._line(f"[tool] {name} {shown}")

    def _tool_ended(self, call_id: str, name: str, *, failed: bool) -> None:
        started = self._started.pop(call_id, None)
        took = f" in {time.perf_counter() - started:.2f} s" if started is not None else ""
        self._line(f"[tool] {name} {'failed' if failed else 'done'}{took}")

    def _line(self, text: str) -> None:
        if self.text_printed:
            print(flush=True)  # the streamed text so far ends its line before the progress line
            self.text_printed = False
        print(text, file=sys.stderr, flush=True)


def _run_summary(result: AgentRunResult[str], tool_calls: int, elapsed: float, answered: float) -> str:
    usage = result.usage
    response = _last_response(result.all_messages())
    session = (response.provider_details or {}).get("session_id")
    cost = f"${usage.cost:.6f}" if usage.cost is not None else "unknown"
    return (
        f"[done] {usage.input_tokens} input and {usage.output_tokens} output tokens, "
        f"{tool_calls} tool call(s); cost {cost}; {elapsed:.2f} s (answered {answered:.2f} s after the process "
        f"started); session {session}"
    )


def seconds_since_process_start() -> float:
    """Seconds since this process started: from the kernel's record of its start (Linux, 10 ms resolution), else
    since this module was imported (missing the interpreter's own start)."""
    from claudecode_model._process.platform import seconds_since_process_start as since_start

    seconds = since_start()
    return seconds if seconds is not None else time.monotonic() - _IMPORTED


async def _doctor(args: argparse.Namespace) -> int:
    from claudecode_model._process.binary import cli_version_text, find_cli, parse_version, support_note
    from claudecode_model.exceptions import ClaudeCodeError

    problems = 0
    try:
        cli = find_cli(args.cli_path)
    except ClaudeCodeError as error:
        print(f"[fail] Claude Code CLI: {error}")
        return 1
    version = cli_version_text(cli)
    print(f"[ok]   Claude Code CLI: {cli} ({version})")
    note = support_note(parse_version(version))
    print(f"[warn] Claude Code version: {note}" if note else "[ok]   Claude Code version: in the tested range")
    for line in _credentials(cli):
        print(line)
    try:
        trip = await _offline_round_trip("doctor check", args.cli_path)
    except ClaudeCodeError as error:
        problems += 1
        print(f"[fail] offline round trip: {error}")
    else:
        print(
            f"[ok]   offline round trip through the real CLI in {trip.elapsed:.2f} s "
            f"({trip.api_requests} API request(s) to {trip.backend_url})"
        )
    return 1 if problems else 0


def _credentials(cli: Path | None = None) -> list[str]:
    """The doctor's lines on credentials; with the ``cli`` that runs, a login outside ``.credentials.json`` (the
    macOS Keychain) is asked of ``claude auth status``."""
    from claudecode_model._process import platform
    from claudecode_model._process.credentials import cli_login_method, find_credentials

    lines: list[str] = []
    credentials = find_credentials({})
    found: list[str] = list(credentials.api_keys)
    login = f"login in {credentials.login}" if credentials.login is not None else None
    if login is None and platform.LOGIN_IN_KEYCHAIN and cli is not None:
        method = cli_login_method(cli)
        if method is not None:
            login = f"login in the macOS Keychain ({method}, as `claude auth status` reports)"
    if login is not None:
        found.append(login)
    if os.environ.get("CLAUDE_CODE_USE_BEDROCK") or os.environ.get("CLAUDE_CODE_USE_VERTEX"):
        found.append("cloud provider settings (Bedrock/Vertex)")
    if found:
        lines.append(f"[ok]   credentials: {', '.join(found)} (values not shown)")
    else:
        lines.append(f"[warn] credentials: none found; run `{LOGIN_COMMAND}` to use `claudecode-model run` online")
    if credentials.api_keys and login is not None:
        lines.append(
            f"[warn] billing: runs bill {credentials.api_keys[0]}, not the subscription login (Claude Code prefers "
            "a key in the environment); set claude_code_auth='subscription' to bill the login"
        )
    elif credentials.api_keys or credentials.login is not None:
        lines.append(f"[ok]   billing: runs bill {credentials.billed()}")
    elif login is not None:
        lines.append("[ok]   billing: runs bill the subscription login (in the macOS Keychain)")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
