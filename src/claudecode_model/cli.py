"""The ``claudecode-model`` command: ``demo``, ``run`` and ``doctor``.

``demo --research`` and ``run --research`` use the Tavily research agent (the ``tavily`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, NativeToolCallPart, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model._cli import cli_version_text, find_cli
from claudecode_model.exceptions import ClaudeCodeError
from claudecode_model.model import ClaudeCodeModel

DEMO_PROMPT = "In one sentence: what does claudecode-model do?"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``claudecode-model`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        result: int = asyncio.run(args.handler(args))
    except ClaudeCodeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="claudecode-model", description="pydantic-ai agents on Claude through the Claude Code CLI."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run an agent through the real CLI against the offline backend")
    demo.add_argument("prompt", nargs="?", default=None, help="what to ask (each demo has a question of its own)")
    demo.add_argument(
        "--research",
        action="store_true",
        help="run the Tavily research agent, with Tavily faked on 127.0.0.1 too (needs the 'tavily' extra)",
    )
    demo.set_defaults(handler=_demo)

    run = commands.add_parser("run", help="run one prompt with your Claude Code login")
    run.add_argument("prompt")
    run.add_argument("--model", default=None, help="Claude model (sonnet, opus, or a full id)")
    run.add_argument("--instructions", default=None, help="agent instructions (system prompt)")
    run.add_argument("--offline", action="store_true", help="use the offline backend instead of your login")
    run.add_argument("--no-stream", action="store_true", help="print the answer at the end instead of streaming")
    run.add_argument(
        "--research",
        action="store_true",
        help="research on the web with the Tavily tools (needs the 'tavily' extra and TAVILY_API_KEY)",
    )
    run.set_defaults(handler=_run)

    doctor = commands.add_parser("doctor", help="check the CLI, credentials and an offline round trip")
    doctor.set_defaults(handler=_doctor)
    return parser


def _demo_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline backend's stand-in for Claude in the demo: a fixed, honest answer."""
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


async def _demo(args: argparse.Namespace) -> int:
    if args.research:
        return await _research_demo(args)
    from claudecode_model.testing import OfflineBackend

    prompt = args.prompt or DEMO_PROMPT
    with OfflineBackend(FunctionModel(_demo_brain)) as backend:
        model = ClaudeCodeModel(env=backend.cli_env())
        agent = Agent(model, instructions="Answer in one sentence.")
        started = time.perf_counter()
        try:
            result = await agent.run(prompt)
        finally:
            await model.aclose()
        elapsed = time.perf_counter() - started
        print(f"Claude Code CLI: {model.cli_path}")
        print(f"Offline backend: {backend.url} ({len(backend.requests)} API request(s) received)")
        print(f"Prompt: {prompt}")
        print(f"Answer: {result.output}")
        print(_usage_line(_last_response(result.all_messages()), elapsed))
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
        for part in response.parts:
            if isinstance(part, NativeToolCallPart):
                print(f"Tool call: {part.tool_name} {json.dumps(part.args_as_dict(), ensure_ascii=False)}")
        print(f"Answer:\n{result.output}")
        print(_usage_line(response, elapsed))
    return 0


def _last_response(messages: list[ModelMessage]) -> ModelResponse:
    response = messages[-1]
    if not isinstance(response, ModelResponse):
        raise ClaudeCodeError(f"the run ended with a {type(response).__name__}, not a model response")
    return response


def _usage_line(response: ModelResponse, elapsed: float) -> str:
    usage = response.usage
    session = (response.provider_details or {}).get("session_id")
    return (
        f"Usage: {usage.input_tokens} input, {usage.output_tokens} output tokens; "
        f"cost ${usage.cost or 0:.6f} (offline list price); {elapsed:.2f} s; session {session}"
    )


async def _run(args: argparse.Namespace) -> int:
    if args.research:
        problem = _research_problem(offline=args.offline)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 1
    if args.offline:
        from claudecode_model.testing import OfflineBackend

        with OfflineBackend() as backend:
            return await _run_with(args, ClaudeCodeModel(args.model, env=backend.cli_env()))
    return await _run_with(args, ClaudeCodeModel(args.model))


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
    if not args.research:
        return Agent(model, instructions=args.instructions)
    from claudecode_model.tavily import RESEARCH_INSTRUCTIONS, create_research_agent

    return create_research_agent(model, instructions=args.instructions or RESEARCH_INSTRUCTIONS)


async def _run_with(args: argparse.Namespace, model: ClaudeCodeModel) -> int:
    agent = _agent(args, model)
    try:
        if args.no_stream:
            result = await agent.run(args.prompt)
            print(result.output)
            return 0
        async with agent.run_stream(args.prompt) as stream:
            async for delta in stream.stream_text(delta=True):
                print(delta, end="", flush=True)
        print()
    finally:
        await model.aclose()
    return 0


async def _doctor(args: argparse.Namespace) -> int:
    problems = 0
    try:
        cli = find_cli()
    except ClaudeCodeError as error:
        print(f"[fail] Claude Code CLI: {error}")
        return 1
    version = cli_version_text(cli)
    print(f"[ok]   Claude Code CLI: {cli} ({version})")
    for line in _credentials():
        print(line)
    started = time.perf_counter()
    try:
        await _demo(argparse.Namespace(prompt="doctor check", research=False))
    except ClaudeCodeError as error:
        problems += 1
        print(f"[fail] offline round trip: {error}")
    else:
        print(f"[ok]   offline round trip through the real CLI in {time.perf_counter() - started:.2f} s")
    return 1 if problems else 0


def _credentials() -> list[str]:
    lines: list[str] = []
    found: list[str] = [name for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if os.environ.get(name)]
    config_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    if (config_dir / ".credentials.json").exists():
        found.append(f"login in {config_dir / '.credentials.json'}")
    if os.environ.get("CLAUDE_CODE_USE_BEDROCK") or os.environ.get("CLAUDE_CODE_USE_VERTEX"):
        found.append("cloud provider settings (Bedrock/Vertex)")
    if found:
        lines.append(f"[ok]   credentials: {', '.join(found)} (values not shown)")
    else:
        lines.append("[warn] credentials: none found; run `claude login` to use `claudecode-model run` online")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
