"""Agent-run tool execution: pydantic-ai runs the agent's tools, the CLI turn waits for their results.

Each API round trip the CLI makes is one pydantic-ai model request. When Claude's reply calls the agent's own tools
(function tools or output tools), the request returns those calls as ordinary ``ToolCallPart`` s with Claude's
``tool_use`` ids, and the CLI turn is parked: the MCP handlers the CLI invokes for those calls do not run anything,
they wait (:class:`~claudecode_model._tools.parked_calls.CallResults`). pydantic-ai then runs the calls itself
(validation, retries, ``sequential``, approvals, deferred calls, ``end_strategy``, hooks, events, usage,
instrumentation) and its next request carries the answers, which resolve the waiting handlers; the same CLI turn goes
on.

This module holds the pieces of that flow that do not depend on how a turn is run: the waiting tool specs, finding
the pending calls of a history and delivering pydantic-ai's answers to them (the run scope that decides what
happens to a run's parked turns is :mod:`claudecode_model._turns.run_scope`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

from claudecode_model._history.plan import ResumedCalls
from claudecode_model._history.replay import TranscriptEntry, transcript_of
from claudecode_model._history.to_anthropic import ContentBlock, user_content_blocks
from claudecode_model._tools.builtin_approvals import (
    approval_result,
    approved_call_to_take_up,
    is_builtin_call,
    not_approved_result,
)
from claudecode_model._tools.call_results import anthropic_tool_result, mcp_result, not_answered_result, results_by_call
from claudecode_model._tools.core import McpResponse, ToolCallHandler, ToolSpec, text_result
from claudecode_model._tools.execution import TOOL_EXECUTIONS, ToolExecution, checked_tool_execution
from claudecode_model._tools.parked_calls import CallResults
from claudecode_model._tools.result_reader import ResultReader
from claudecode_model._tools.router import tool_specs

__all__ = [
    "TOOL_EXECUTIONS",
    "PendingCalls",
    "ToolExecution",
    "checked_tool_execution",
    "deliver_answers",
    "pending_calls",
    "resumed_calls",
    "waiting_tool_specs",
]

logger = logging.getLogger(__name__)


def waiting_tool_specs(
    tool_defs: Sequence[ToolDefinition], results: CallResults, reader: ResultReader | None = None
) -> list[ToolSpec]:
    """The agent's tools (function and output tools) as MCP tool specs whose handlers wait for pydantic-ai's results.

    Every tool is marked read-only, so that the CLI invokes the handlers of all calls of a reply at once (pydantic-ai
    itself decides what runs sequentially). Before a handler answers, ``reader`` offers its tools if a result was cut.
    """

    def handler(name: str) -> ToolCallHandler:
        async def handle(arguments: dict[str, Any], tool_use_id: str | None) -> McpResponse:
            if tool_use_id is None:
                return text_result(f"Tool {name!r} cannot run: Claude Code sent no tool_use id.", is_error=True)
            response = await results.wait(tool_use_id)
            if reader is not None:
                await reader.announce()
            return response

        return handle

    return tool_specs(tool_defs, handler, read_only=lambda tool: True)


@dataclass(frozen=True)
class PendingCalls:
    """The agent tool calls of a history's last response, and what the requests after it say."""

    response: ModelResponse
    calls: list[ToolCallPart]
    new_parts: list[ModelRequestPart]
    """The parts of the requests after the response (answers, user prompts, ...)."""

    @property
    def ids(self) -> list[str]:
        return [call.tool_call_id for call in self.calls]

    @property
    def prompts(self) -> list[UserPromptPart]:
        """User prompts sent along with the answers (a new message while the turn waits)."""
        return [part for part in self.new_parts if isinstance(part, UserPromptPart)]

    def answered(self) -> bool:
        """Whether every pending call has an answer in the new parts."""
        answers = results_by_call(self.new_parts)
        return all(call_id in answers for call_id in self.ids)


def pending_calls(messages: Sequence[ModelMessage], provider_name: str) -> PendingCalls | None:
    """The plain tool calls of the last response of ``messages`` if it is ``provider_name``'s, else ``None``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ModelResponse):
            continue
        if message.provider_name != provider_name:
            return None
        calls = [part for part in message.parts if type(part) is ToolCallPart]
        if not calls:
            return None
        new_parts = [part for later in messages[index + 1 :] if isinstance(later, ModelRequest) for part in later.parts]
        return PendingCalls(message, calls, new_parts)
    return None


def deliver_answers(results: CallResults, pending: PendingCalls) -> list[str]:
    """Resolve the waiting handlers of ``pending`` with pydantic-ai's answers; the ids that had none (each gets a
    "not executed" error, so that the CLI turn goes on). A built-in call's answer is the approval hook's decision
    (an unanswered one is denied)."""
    answers = results_by_call(pending.new_parts)
    missing: list[str] = []
    for call in pending.calls:
        answer = answers.get(call.tool_call_id)
        if answer is None:
            missing.append(call.tool_call_id)
            results.resolve(call.tool_call_id, not_answered_result(call.tool_name))
        elif is_builtin_call(call):
            results.resolve(call.tool_call_id, approval_result(call, answer))
        else:
            results.resolve(call.tool_call_id, mcp_result(answer))
    if missing:
        logger.warning("the request answered no result for tool call(s) %s: they get a 'not executed' error", missing)
    return missing


# --- continuing from the history (no parked turn: another model instance, another process) ---------------------


def resumed_calls(messages: Sequence[ModelMessage], pending: PendingCalls) -> ResumedCalls:
    """How a new CLI session takes up the pending calls of ``messages``' last response (no turn is parked for
    them here): the history up to that response is replayed so that Claude sees exactly the answers pydantic-ai
    gave, and a new prompt sent along with the answers is the turn's message.

    Claude Code re-runs one deferred call when a session is resumed with an empty prompt (the call's MCP handler,
    or for a built-in tool the CLI's own run of it once the approval gate allowed it, with the same ``tool_use``
    id; then the turn goes on). That call is the approved built-in call if there is one (at most one can run, see
    :func:`~claudecode_model._tools.builtin_approvals.approved_call_to_take_up`), else the last pending call; each
    other pending call is answered in the transcript, in a reply of its own: an agent tool with pydantic-ai's
    result, a denied built-in call with the person's message. With a new prompt along with the answers, all answers
    go into the transcript and the prompt is the turn's message.
    """
    answers = results_by_call(pending.new_parts)
    approved = approved_call_to_take_up(pending.calls, answers, prompt=bool(pending.prompts))

    def result_block(call: ToolCallPart) -> ContentBlock:
        answer = answers.get(call.tool_call_id)
        if is_builtin_call(call):
            result = approval_result(call, answer) if answer is not None else not_approved_result(call)
        else:
            result = mcp_result(answer) if answer is not None else not_answered_result(call.tool_name)
        return anthropic_tool_result(call.tool_call_id, result)

    index = next(i for i, message in enumerate(messages) if message is pending.response)
    entries = transcript_of(messages[: index + 1])
    prompt = [block for part in pending.prompts for block in user_content_blocks(part.content)]
    calls_made = len(pending.calls)
    if not entries or entries[-1].role != "assistant":
        raise ValueError("the replayed history must end with the reply that made the pending calls")
    history, reply = entries[:-1], entries[-1]
    if prompt:
        answered = TranscriptEntry("user", [result_block(call) for call in pending.calls])
        return ResumedCalls([*history, reply, answered], None, prompt, calls_made)
    calls = {call.tool_call_id: call for call in pending.calls}
    last_id = (approved or pending.calls[-1]).tool_call_id
    # The call taken up closes the reply (Claude Code re-runs the last call of the transcript's last reply).
    taken_up = [block for block in reply.content if block.get("type") == "tool_use" and block.get("id") == last_id]
    blocks = [block for block in reply.content if not any(block is deferred for deferred in taken_up)]
    [deferred] = taken_up
    split: list[TranscriptEntry] = []
    chunk: list[ContentBlock] = []
    for block in blocks:
        chunk.append(block)
        call_id = block.get("id") if block.get("type") == "tool_use" else None
        if call_id in calls:
            split.append(TranscriptEntry("assistant", chunk))
            split.append(TranscriptEntry("user", [result_block(calls[call_id])]))
            chunk = []
    split.append(TranscriptEntry("assistant", [*chunk, deferred]))
    return ResumedCalls([*history, *split], deferred, [], calls_made)
