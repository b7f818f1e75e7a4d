"""Claude Code's built-in tools under pydantic-ai's approvals: ask a person, or decide in code.

Usage::

    python examples/builtin_tools.py            # Claude through your Claude Code login
    python examples/builtin_tools.py --offline  # a scripted Claude on the offline backend (no login, no network)

The agent may run ``Bash`` in a scratch directory. Each Bash call first ends the run with ``DeferredToolRequests``;
the program shows the command and asks you (``--yes`` approves everything, ``--no`` denies everything). Then the
same agent runs again with a policy instead: commands that start with ``ls`` or ``cat`` run at once, ``rm`` is
denied, anything else still asks.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from claudecode_model import BuiltinToolApprovals, ClaudeCodeModel, ClaudeCodeModelSettings, PolicyDecision

TASK = "Create notes.txt saying 'hello', then show the directory listing."


def policy(call: ToolCallPart) -> PolicyDecision:
    """Read-only commands run, deleting is refused, the rest is left to a person (``None``)."""
    command = str(call.args_as_dict().get("command", ""))
    if command.startswith(("ls", "cat")):
        return True
    if command.startswith("rm"):
        return ToolDenied("Deleting files is not allowed here.")
    return None


def ask_person(call: ToolCallPart, answer: str | None) -> bool | ToolApproved | ToolDenied:
    """The person's decision on one call: approve, deny, or approve a changed command."""
    print(f"\nClaude wants to run {call.tool_name}: {call.args_as_dict()}")
    reply = answer or input("Approve? [y]es / [n]o / or type a replacement command: ").strip()
    if reply in ("y", "yes"):
        return True
    if reply in ("n", "no"):
        return ToolDenied("The user said no.")
    return ToolApproved(override_args={"command": reply})


async def run(
    agent: Agent[None, str | DeferredToolRequests], answer: str | None, model_settings: ClaudeCodeModelSettings
) -> str:
    """Run the task, answering each approval the run asks for, until Claude answers."""
    result = await agent.run(TASK, model_settings=model_settings)
    while isinstance(result.output, DeferredToolRequests):
        decisions = {call.tool_call_id: ask_person(call, answer) for call in result.output.approvals}
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals=decisions),
            model_settings=model_settings,
        )
    return result.output


def scripted_claude(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What the offline backend answers: two Bash calls, then a summary of what they returned."""
    replies = sum(isinstance(message, ModelResponse) for message in messages)
    commands = ["echo hello > notes.txt", "ls"]
    if replies < len(commands):
        return ModelResponse(parts=[ToolCallPart("Bash", {"command": commands[replies]})])
    results = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    return ModelResponse(parts=[TextPart("Done. The last command said: " + str(results[-1].content).strip())])


def files_in(directory: str) -> list[str]:
    return sorted(path.name for path in Path(directory).iterdir())


async def main(env: dict[str, str] | None, answer: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        model = ClaudeCodeModel(env=env)
        agent: Agent[None, str | DeferredToolRequests] = Agent(
            model,
            output_type=[str, DeferredToolRequests],
            toolsets=[BuiltinToolApprovals(["Bash"])],
            model_settings={"claude_code_cwd": scratch},
        )
        try:
            print("Asking for every call:")
            print(await run(agent, answer, {}))
            print("\nWith a policy:")
            print(await run(agent, answer, {"claude_code_builtin_tool_policy": policy}))
        finally:
            await model.aclose()
        print("\nFiles:", files_in(scratch))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offline", action="store_true", help="a scripted Claude on the offline backend")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--yes", action="store_const", const="y", dest="answer", help="approve every call")
    choice.add_argument("--no", action="store_const", const="n", dest="answer", help="deny every call")
    arguments = parser.parse_args()
    if arguments.offline:
        from claudecode_model.testing import OfflineBackend

        with OfflineBackend(FunctionModel(scripted_claude)) as backend:
            asyncio.run(main(backend.cli_env(), arguments.answer))
    else:
        asyncio.run(main(None, arguments.answer))
