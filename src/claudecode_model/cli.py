"""The ``claudecode-model`` command: ``demo``, ``run`` and ``doctor``."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model._cli_discovery import find_cli
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
    demo.add_argument("prompt", nargs="?", default=DEMO_PROMPT)
    demo.set_defaults(handler=_demo)

    run = commands.add_parser("run", help="run one prompt with your Claude Code login")
    run.add_argument("prompt")
    run.add_argument("--model", default=None, help="Claude model (sonnet, opus, or a full id)")
    run.add_argument("--instructions", default=None, help="agent instructions (system prompt)")
    run.add_argument("--offline", action="store_true", help="use the offline backend instead of your login")
    run.add_argument("--no-stream", action="store_true", help="print the answer at the end instead of streaming")
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
    from claudecode_model.testing import OfflineBackend

    with OfflineBackend(FunctionModel(_demo_brain)) as backend:
        model = ClaudeCodeModel(env=backend.cli_env())
        agent = Agent(model, instructions="Answer in one sentence.")
        started = time.perf_counter()
        try:
            result = await agent.run(args.prompt)
        finally:
            await model.aclose()
        elapsed = time.perf_counter() - started
        response = result.all_messages()[-1]
        assert isinstance(response, ModelResponse)
        details = response.provider_details or {}
        print(f"Claude Code CLI: {model.cli_path}")
        print(f"Offline backend: {backend.url} ({len(backend.requests)} API request(s) received)")
        print(f"Prompt: {args.prompt}")
        print(f"Answer: {result.output}")
        usage = response.usage
        print(
            f"Usage: {usage.input_tokens} input, {usage.output_tokens} output tokens; "
            f"cost ${usage.cost or 0:.6f} (offline list price); {elapsed:.2f} s; session {details.get('session_id')}"
        )
    return 0


async def _run(args: argparse.Namespace) -> int:
    if args.offline:
        from claudecode_model.testing import OfflineBackend

        with OfflineBackend() as backend:
            return await _run_with(args, ClaudeCodeModel(args.model, env=backend.cli_env()))
    return await _run_with(args, ClaudeCodeModel(args.model))


async def _run_with(args: argparse.Namespace, model: ClaudeCodeModel) -> int:
    agent = Agent(model, instructions=args.instructions)
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
    version = _cli_version(cli)
    print(f"[ok]   Claude Code CLI: {cli} ({version})")
    for line in _credentials():
        print(line)
    started = time.perf_counter()
    try:
        await _demo(argparse.Namespace(prompt="doctor check"))
    except ClaudeCodeError as error:
        problems += 1
        print(f"[fail] offline round trip: {error}")
    else:
        print(f"[ok]   offline round trip through the real CLI in {time.perf_counter() - started:.2f} s")
    return 1 if problems else 0


def _cli_version(cli: Path) -> str:
    try:
        completed = subprocess.run(
            [str(cli), "--version"], capture_output=True, text=True, timeout=30, env=_quiet_env(), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"version unknown: {error}"
    return completed.stdout.strip() or completed.stderr.strip() or f"exit code {completed.returncode}"


def _quiet_env() -> dict[str, str]:
    return {**os.environ, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


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
