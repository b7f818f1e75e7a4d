"""From the SDK's message stream of one CLI turn to pydantic-ai parts, events, usage and metadata."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    RateLimitEvent,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import Message
from pydantic_ai.messages import (
    FinishReason,
    ModelResponsePart,
    ModelResponseStreamEvent,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.usage import RequestUsage

from claudecode_model._compat import ModelResponsePartsManager, api_error_fields
from claudecode_model._history.details import (
    API_RETRIES_KEY,
    APPROVED_CALL_KEY,
    CLI_TOOL_NAME_KEY,
    COMPACTED_KEY,
    PARENT_TOOL_CALL_ID_KEY,
    PROVIDER_NAME,
    RATE_LIMIT_KEY,
)
from claudecode_model._sessions.session import Delivery
from claudecode_model._stream.attempts import AttemptTracker
from claudecode_model._tools.native import NativeToolPlan

__all__ = [
    "TurnOutcome",
    "TurnTranslator",
    "api_retry_details",
    "delivery_unless_streaming",
    "rate_limit_details",
    "request_usage",
]

logger = logging.getLogger(__name__)

_FINISH_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
    "pause_turn": "stop",
}


@dataclass
class TurnOutcome:
    """What the turn produced besides parts: the result message, errors, usage, metadata."""

    result: ResultMessage | None = None
    session_id: str | None = None
    api_error_text: str | None = None
    api_error_kind: str | None = None
    api_error_type: str | None = None
    """The API's error ``type`` (such as ``rate_limit_error``), where the CLI reported it."""
    api_error_code: str | None = None
    """The API error's ``details.error_code`` (such as ``credits_required``), where the CLI reported it."""
    api_error_in_stream: bool = False
    """Whether the API reported the error inside a response stream that had started."""
    last_stop_reason: str | None = None
    stream_usage: RequestUsage = field(default_factory=RequestUsage)
    init_data: dict[str, Any] = field(default_factory=dict)
    last_entry_uuid: str | None = None
    """The transcript entry of the last conversation message of the turn (where a later turn may resume)."""
    rate_limit: dict[str, Any] | None = None
    """The last rate-limit state the CLI reported in the turn (it reports one when the state changes)."""
    reply_model: str | None = None
    """The model that wrote Claude's last reply (the fallback model, once Claude Code switched to it)."""
    recovered: bool = False
    """The result said ``is_error`` with subtype ``success`` and held an answer, which the turn kept."""
    answered: set[str] = field(default_factory=set)
    """The ids of the API responses that started in the turn (streamed or whole)."""
    api_retries: list[dict[str, Any]] = field(default_factory=list)
    """The API requests the CLI retried by itself (its ``api_retry`` messages)."""

    @property
    def api_requests(self) -> int:
        """The API requests the CLI made in the turn, as far as its messages show: those answered, those it retried,
        and a failed last one (after an error inside a stream the CLI asks once more without streaming)."""
        return len(self.answered) + len(self.api_retries) + int(self.api_error_kind is not None)

    compactions: list[dict[str, Any]] = field(default_factory=list)
    """Each compaction of the conversation Claude Code reported in the turn (``compact_boundary``)."""


class TurnTranslator:
    """Feeds SDK messages into a parts manager, yielding pydantic-ai stream events as they become known.

    Text and thinking arrive as deltas from the CLI's partial-message stream events; tool calls Claude Code
    executes (the agent's own MCP tools and built-in tools) become ``NativeToolCallPart`` / ``NativeToolReturnPart``
    so that text written before a tool call is never mistaken for the final answer. A call of a tool pydantic-ai
    runs itself (``output_tool_names``: its output tools, and its function tools when it runs them, as the CLI
    names them) becomes a plain ``ToolCallPart`` instead, for the agent to run or validate; its result inside the
    CLI is not reported.

    When a reply of Claude's ends (its ``message_delta``, once the CLI reported every call's complete block, else its
    ``message_stop``) having called such tools, :attr:`parked_calls` holds their ids: the response ends there and
    the CLI turn waits for pydantic-ai's results. :meth:`next_response` then starts the next response of the same
    turn.

    Parts of an aborted attempt (a response whose stream was cut, see :mod:`claudecode_model._stream.attempts`) stay in
    the parts manager, whose events were already sent, but :meth:`kept` leaves them out of the response.
    """

    def __init__(
        self,
        parts: ModelResponsePartsManager,
        *,
        tool_prefixes: tuple[str, ...],
        output_tool_names: frozenset[str] = frozenset(),
        native_tools: NativeToolPlan | None = None,
        denied: Callable[[str, dict[str, Any], str], bool] | None = None,
        builtin_approvals: frozenset[str] = frozenset(),
        whole_results: Mapping[str, str] | None = None,
    ) -> None:
        """``denied(cli_name, arguments, call_id)`` tells a call of a tool pydantic-ai runs (or approves) that the
        CLI decides by itself (a tool parameter restriction, the built-in tool policy): it is reported as a native
        call, so that pydantic-ai does not run it, and the CLI's result as its result.

        ``builtin_approvals`` are built-in tools whose calls pydantic-ai approves: a call is a plain
        ``ToolCallPart``, and what the CLI made of it once approved or denied is reported as a native return.

        ``whole_results`` holds the whole text of results Claude Code got cut, by ``tool_use`` id (filled while the
        turn runs): the native return reports that instead of the cut."""
        self._parts = parts
        self._tool_prefixes = tool_prefixes
        self._native_tools = native_tools or NativeToolPlan()
        self._output_tool_names = output_tool_names
        self._denied = denied
        self._denied_calls: set[str] = set()
        self._builtin_approvals = builtin_approvals
        self._whole_results = whole_results if whole_results is not None else {}
        self.outcome = TurnOutcome()
        self._message_id: str | None = None
        self._block_counts: dict[str, int] = {}
        self._streamed: set[tuple[str, int]] = set()
        self._tool_names: dict[str, str] = {}
        self.attempts = AttemptTracker()
        self._reply_calls: list[str] = []
        """Ids of this reply's calls of tools pydantic-ai runs, in order."""
        self._settled_calls: set[str] = set()
        """Ids of the tool calls whose complete block the CLI reported (its assistant message)."""
        self.parked_calls: list[str] = []
        """Set when a reply ended with calls of tools pydantic-ai runs: the response is complete, the turn waits."""
        self._responses = 0
        self._charged = Decimal(0)
        """What the turn's earlier responses were charged (each its list price) before the CLI reported a cost."""
        """Responses of this turn before the current one (each ended at a reply with such calls)."""
        self._in_stream = False
        """A streamed reply is in progress (between ``message_start`` and ``message_stop``)."""
        self._reply_unfinished = False
        """A reply's stream started and never got its ``message_delta`` (an error cut it, even if the CLI then
        closed it with a ``message_stop``)."""

    def tools_waiting(self, ids: frozenset[str]) -> bool:
        """The MCP handlers of ``ids`` wait for pydantic-ai: a reply that was not streamed (no ``message_stop`` will
        come) ends here once every call it made waits. Whether the response ends now."""
        if self._in_stream or not self._reply_calls or not set(self._reply_calls) <= ids:
            return False
        self.parked_calls, self._reply_calls = self._reply_calls, []
        return True

    def resumes_call(self, call_id: str, cli_name: str) -> None:
        """The session takes up ``call_id``, a call of the history its transcript deferred: the CLI's result of it
        is pydantic-ai's answer (already in the history), not part of this turn's response."""
        self._tool_names[call_id] = cli_name

    def next_response(self, parts: ModelResponsePartsManager) -> None:
        """Start the next response of the same turn (after pydantic-ai answered the parked calls)."""
        self._parts = parts
        self.parked_calls = []
        self.outcome.stream_usage = RequestUsage()
        self.attempts.next_response()
        self._responses += 1

    @property
    def in_stream(self) -> bool:
        """Whether a streamed reply is in progress (its ``message_start`` came, its ``message_stop`` not yet)."""
        return self._in_stream

    @property
    def parts(self) -> ModelResponsePartsManager:
        """The parts manager of the response being built."""
        return self._parts

    def display_tool_name(self, cli_name: str) -> str:
        """The agent's name for a tool Claude called through our MCP server; built-in tools keep their name, except
        those standing in for a native tool of the request, which take its name (``web_search``, ``mcp_server:x``)."""
        native = self._native_tools.display_name(cli_name)
        if native is not None:
            return native
        for prefix in self._tool_prefixes:
            if cli_name.startswith(prefix):
                return cli_name[len(prefix) :]
        return cli_name

    def kept(self, parts: Sequence[ModelResponsePart]) -> list[ModelResponsePart]:
        """``parts`` (the parts manager's, in order) without those of aborted attempts."""
        discarded = self.attempts.discarded
        return [part for index, part in enumerate(parts) if index not in discarded]

    def feed(self, message: Message) -> Iterator[ModelResponseStreamEvent]:
        match message:
            case StreamEvent():
                if message.parent_tool_use_id is None:
                    yield from self._stream_event(message.event)
            case AssistantMessage():
                if message.parent_tool_use_id is None:
                    if message.error is None and message.uuid:
                        self.outcome.last_entry_uuid = message.uuid
                    yield from self._assistant(message)
                else:
                    yield from self._subagent_calls(message, message.parent_tool_use_id)
            case UserMessage():
                if message.parent_tool_use_id is None and message.uuid:
                    self.outcome.last_entry_uuid = message.uuid
                yield from self._tool_results(message, message.parent_tool_use_id)
            case ResultMessage():
                self.outcome.result = message
                self.outcome.session_id = message.session_id
            case RateLimitEvent():
                self.outcome.rate_limit = rate_limit_details(message)
            case SystemMessage() if message.subtype == "api_retry":
                self.outcome.api_retries.append(api_retry_details(message.data))
            case SystemMessage():
                if message.subtype == "init":
                    self.outcome.init_data = message.data
                    session_id = message.data.get("session_id")
                    if isinstance(session_id, str):
                        self.outcome.session_id = session_id
                elif message.subtype == "compact_boundary":
                    self._compacted(message.data)
            case _:
                logger.debug("ignoring SDK message %s", type(message).__name__)

    # --- partial-message stream events (raw Anthropic API events) -------------------------------------------

    def _stream_event(self, event: dict[str, Any]) -> Iterator[ModelResponseStreamEvent]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self._message_id = message.get("id")
            if self._message_id is not None:
                self.attempts.started(self._message_id)
                self.outcome.answered.add(self._message_id)
            self._reply_calls = []
            self._in_stream = True
            self._reply_unfinished = True
            self._add_usage(message.get("usage") or {})
            return
        if kind == "message_stop":
            self.attempts.stopped()
            self._in_stream = False
            if self._reply_calls:
                self.parked_calls, self._reply_calls = self._reply_calls, []
            return
        if kind == "message_delta":
            self.attempts.finished()
            self._reply_unfinished = False
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self.outcome.last_stop_reason = delta["stop_reason"]
            self._add_usage(event.get("usage") or {}, output_only=True)
            if self._reply_calls and self._settled_calls.issuperset(self._reply_calls):
                # The reply is complete but for its message_stop: its calls go to pydantic-ai now, a few
                # milliseconds sooner, and the message_stop is read with the next response.
                self._in_stream = False
                self.parked_calls, self._reply_calls = self._reply_calls, []
            return
        index = event.get("index")
        if self._message_id is None or not isinstance(index, int):
            return
        yield from self._tagged(self._message_id, self._block_event(kind, (self._message_id, index), event))

    def _block_event(
        self, kind: object, key: tuple[str, int], event: dict[str, Any]
    ) -> Iterator[ModelResponseStreamEvent]:
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                cli_name = str(block.get("name", ""))
                call_id = str(block.get("id"))
                self._tool_names[call_id] = cli_name
                self.attempts.tool_call(key[0], call_id)
                if self._denied is not None and cli_name in self._output_tool_names:
                    return  # held until its arguments are complete: the CLI may deny it
                self._streamed.add(key)
                part = self._call_part(cli_name, "", call_id)
                yield self._parts.handle_part(vendor_part_id=key, part=part)
            return
        if kind != "content_block_delta":
            return
        delta = event.get("delta") or {}
        match delta.get("type"):
            case "text_delta":
                self._streamed.add(key)
                yield from self._parts.handle_text_delta(vendor_part_id=key, content=delta.get("text", ""))
            case "thinking_delta":
                self._streamed.add(key)
                yield from self._parts.handle_thinking_delta(
                    vendor_part_id=key, content=delta.get("thinking", ""), provider_name=PROVIDER_NAME
                )
            case "signature_delta":
                yield from self._parts.handle_thinking_delta(
                    vendor_part_id=key, signature=delta.get("signature", ""), provider_name=PROVIDER_NAME
                )
            case "input_json_delta":
                partial = delta.get("partial_json", "")
                if partial and key in self._streamed:
                    yield from self._parts.handle_tool_call_delta_events(vendor_part_id=key, args=partial)
            case _:
                return

    def _tagged(
        self, message_id: str, events: Iterable[ModelResponseStreamEvent]
    ) -> Iterator[ModelResponseStreamEvent]:
        """``events``, noting which parts each API response built."""
        for event in events:
            index = getattr(event, "index", None)
            if isinstance(index, int):
                self.attempts.part(message_id, index)
            yield event

    def _add_usage(self, usage: Mapping[str, Any], *, output_only: bool = False) -> None:
        if output_only:
            usage = {"output_tokens": usage.get("output_tokens")}
        self.outcome.stream_usage.incr(request_usage(usage))

    # --- complete messages ----------------------------------------------------------------------------------

    def _assistant(self, message: AssistantMessage) -> Iterator[ModelResponseStreamEvent]:
        if message.error is not None:
            outcome = self.outcome
            outcome.api_error_kind = message.error
            outcome.api_error_text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
            reported = api_error_fields(message)
            outcome.api_error_type = _text_or_none(reported.get("api_error_type"))
            outcome.api_error_code = _text_or_none(reported.get("api_error_code"))
            outcome.api_error_in_stream = self._reply_unfinished
            return
        if message.model:
            self.outcome.reply_model = message.model
        message_id = message.message_id or f"anon-{id(message)}"
        self.outcome.answered.add(message_id)
        if self._in_stream and message_id != self._message_id:
            # A reply that was not streamed (the retry of a cut stream): the streamed attempt was abandoned.
            self._in_stream = False
            self._reply_calls = []
        self.attempts.delivered(message_id)
        yield from self._tagged(message_id, self._assistant_blocks(message_id, message))

    def _assistant_blocks(self, message_id: str, message: AssistantMessage) -> Iterator[ModelResponseStreamEvent]:
        for block in message.content:
            index = self._block_counts.get(message_id, 0)
            self._block_counts[message_id] = index + 1
            key = (message_id, index)
            if type(block) is ToolUseBlock:
                self._settled_calls.add(block.id)
            if key in self._streamed:
                yield from self._complete_streamed(key, block)
                continue
            match block:
                case TextBlock():
                    yield self._parts.handle_part(vendor_part_id=key, part=TextPart(content=block.text))
                case ThinkingBlock():
                    part = ThinkingPart(content=block.thinking, signature=block.signature, provider_name=PROVIDER_NAME)
                    yield self._parts.handle_part(vendor_part_id=key, part=part)
                case ToolUseBlock():
                    self._tool_names[block.id] = block.name
                    self.attempts.tool_call(message_id, block.id)
                    yield self._parts.handle_part(vendor_part_id=key, part=self._tool_call_part(block))
                case _:
                    logger.debug("ignoring assistant block %s", type(block).__name__)

    def _subagent_calls(self, message: AssistantMessage, parent_id: str) -> Iterator[ModelResponseStreamEvent]:
        """The tool calls of a subagent's reply, linked to the call that started the subagent (text stays inside)."""
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self._tool_names[block.id] = block.name
                part = self._call_part(block.name, block.input, block.id, parent_id=parent_id)
                if isinstance(part, ToolCallPart) and block.id not in self.parked_calls:
                    self.parked_calls.append(block.id)  # a subagent's reply has no stream events to end it
                yield self._parts.handle_part(vendor_part_id=("subagent", block.id), part=part)

    def _complete_streamed(self, key: tuple[str, int], block: Any) -> Iterator[ModelResponseStreamEvent]:
        """Settle a streamed tool call to its final arguments (deltas may be partial JSON)."""
        if not isinstance(block, ToolUseBlock):
            return
        managed = self._parts.get_part_by_vendor_id(key)
        final = self._tool_call_part(block)
        if type(managed) is type(final) and managed.args_as_dict() == final.args_as_dict():
            return
        yield self._parts.handle_part(vendor_part_id=key, part=final)

    def _tool_call_part(self, block: ToolUseBlock) -> ToolCallPart | NativeToolCallPart:
        return self._call_part(block.name, block.input, block.id)

    def _call_part(
        self, cli_name: str, args: dict[str, Any] | str, call_id: str, *, parent_id: str | None = None
    ) -> ToolCallPart | NativeToolCallPart:
        name = self.display_tool_name(cli_name)
        details: dict[str, Any] = {CLI_TOOL_NAME_KEY: cli_name}
        if parent_id is not None:
            details[PARENT_TOOL_CALL_ID_KEY] = parent_id
        if cli_name in self._output_tool_names and self._denies(cli_name, args, call_id):
            self._denied_calls.add(call_id)
            if call_id in self._reply_calls:
                self._reply_calls.remove(call_id)
        elif cli_name in self._output_tool_names:
            if parent_id is None and call_id not in self._reply_calls:
                self._reply_calls.append(call_id)
            return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id, provider_details=details)
        return NativeToolCallPart(
            tool_name=name, args=args, tool_call_id=call_id, provider_name=PROVIDER_NAME, provider_details=details
        )

    def _denies(self, cli_name: str, args: dict[str, Any] | str, call_id: str) -> bool:
        if call_id in self._denied_calls:
            return True
        return self._denied is not None and isinstance(args, dict) and self._denied(cli_name, args, call_id)

    def _tool_results(self, message: UserMessage, parent_id: str | None) -> Iterator[ModelResponseStreamEvent]:
        if isinstance(message.content, str):
            return
        for block in message.content:
            if not isinstance(block, ToolResultBlock):
                continue
            self.attempts.tool_result(block.tool_use_id)
            cli_name = self._tool_names.get(block.tool_use_id, "")
            reported = cli_name in self._builtin_approvals or block.tool_use_id in self._denied_calls
            if cli_name in self._output_tool_names and not reported:
                continue
            details: dict[str, Any] = {CLI_TOOL_NAME_KEY: cli_name, "is_error": bool(block.is_error)}
            if cli_name in self._builtin_approvals and block.tool_use_id not in self._denied_calls:
                details[APPROVED_CALL_KEY] = True
            if parent_id is not None:
                details[PARENT_TOOL_CALL_ID_KEY] = parent_id
            part = NativeToolReturnPart(
                tool_name=self.display_tool_name(cli_name),
                content=self._whole_results.get(block.tool_use_id) or _tool_result_text(block.content),
                tool_call_id=block.tool_use_id,
                provider_name=PROVIDER_NAME,
                provider_details=details,
                outcome="failed" if block.is_error else "success",
            )
            yield self._parts.handle_part(vendor_part_id=None, part=part)

    # --- the end of the turn --------------------------------------------------------------------------------

    def usage(
        self, previous_cost_usd: float | None, price: Callable[[RequestUsage], Decimal | None] | None = None
    ) -> RequestUsage:
        """Usage of this response; the cost is the CLI's cumulative session cost minus what was already counted.

        A turn that is one response reports the result's totals; a turn of several responses (pydantic-ai ran tool
        calls in between) reports each response's own API usage. The CLI reports a cost only at the turn's end: a
        response before it is priced from its own usage by ``price`` (when the price is known), and the last one
        carries the rest of the turn's cost.
        """
        result = self.outcome.result
        totals = result.usage if result is not None and not self._responses else None
        usage = request_usage(totals) if totals else dataclasses.replace(self.outcome.stream_usage)
        if self.parked_calls:
            share = price(usage) if price is not None else None
            if share is not None:
                usage.cost = share
                self._charged += share
            return usage
        if result is not None and result.total_cost_usd is not None:
            cost = Decimal(str(result.total_cost_usd)) - Decimal(str(previous_cost_usd or 0.0)) - self._charged
            usage.cost = max(round(cost, 10), Decimal(0))
        return usage

    def finish_reason(self) -> FinishReason | None:
        if self.parked_calls:
            return "tool_call"
        result = self.outcome.result
        stop = (result.stop_reason if result is not None else None) or self.outcome.last_stop_reason
        if result is not None and result.is_error and not self.outcome.recovered:
            return "error"
        if stop == "tool_use" and result is not None and result.subtype == "success":
            # Claude Code ran every tool itself; a loop that ends on a tool call ended on the one that finishes
            # it (the structured output): nothing is left for the caller to run.
            return "stop"
        return _FINISH_REASONS.get(stop or "", "stop" if stop is None else None)

    def _compacted(self, data: dict[str, Any]) -> None:
        metadata = data.get("compact_metadata") or {}
        entry = {key: metadata.get(key) for key in ("trigger", "pre_tokens", "post_tokens")}
        self.outcome.compactions.append(_jsonable(entry))
        logger.info(
            "Claude Code compacted the conversation (%s, %s tokens -> %s): Claude now sees a summary of the earlier "
            "messages, while the pydantic-ai history still holds them all",
            entry["trigger"],
            entry["pre_tokens"],
            entry["post_tokens"],
        )

    def provider_details(self) -> dict[str, Any]:
        result = self.outcome.result
        details: dict[str, Any] = {"session_id": self.outcome.session_id}
        if self.outcome.compactions:
            details[COMPACTED_KEY] = list(self.outcome.compactions)
        if result is None:
            return details
        details.update(
            num_turns=result.num_turns,
            duration_ms=result.duration_ms,
            duration_api_ms=result.duration_api_ms,
            stop_reason=result.stop_reason,
            terminal_reason=result.terminal_reason,
            subtype=result.subtype,
            total_cost_usd=result.total_cost_usd,
            permission_denials=_jsonable(result.permission_denials or []),
        )
        if result.model_usage:
            details["model_usage"] = _jsonable(result.model_usage)
        if self.outcome.rate_limit is not None:
            details[RATE_LIMIT_KEY] = self.outcome.rate_limit
        if self.outcome.api_retries:
            details[API_RETRIES_KEY] = list(self.outcome.api_retries)
        return details


_STATUS_SUBTYPES = frozenset({"status", "session_state_changed"})
"""System messages that only report the CLI's progress and state (nothing reads them but a live display)."""


def delivery_unless_streaming(message: Message) -> Delivery:
    """How a request that does not stream takes ``message``.

    Dropped: the stream events of text and thinking blocks (the assistant messages carry the same content) and the
    CLI's progress notices. A tool call's events are kept, so that its arguments are the text Claude wrote, as when
    the request streams. Of what is kept, only what can end the response wakes the request at once: the end of a
    reply (``message_stop``, or the ``message_delta`` of a reply that called tools: a reply that called tools
    pydantic-ai runs ends the response) and a subagent's reply (its calls of such tools are not streamed); the rest
    waits for it (the result, an error, the tool calls waiting for pydantic-ai and the CLI's retry notices always
    wake it).
    """
    if type(message) is SystemMessage:
        if message.subtype == "api_retry":
            return Delivery.WAKE  # its WARNING is logged when the CLI retries, not once the turn ends
        return Delivery.DROP if message.subtype in _STATUS_SUBTYPES else Delivery.HOLD
    if type(message) is AssistantMessage:
        return Delivery.HOLD if message.parent_tool_use_id is None else Delivery.WAKE
    if type(message) is ResultMessage:
        return Delivery.WAKE
    if type(message) is not StreamEvent:
        return Delivery.HOLD
    event = message.event
    match event.get("type"):
        case "message_stop":
            return Delivery.WAKE
        case "message_delta":
            # A reply that called tools may end the response here, before its message_stop.
            tool_use = (event.get("delta") or {}).get("stop_reason") == "tool_use"
            return Delivery.WAKE if tool_use else Delivery.HOLD
        case "content_block_start":
            tool_use = (event.get("content_block") or {}).get("type") == "tool_use"
            return Delivery.HOLD if tool_use else Delivery.DROP
        case "content_block_delta":
            tool_use = (event.get("delta") or {}).get("type") == "input_json_delta"
            return Delivery.HOLD if tool_use else Delivery.DROP
        case "content_block_stop":
            return Delivery.DROP
        case _:
            return Delivery.HOLD


_RETRY_FIELDS = ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")


def api_retry_details(data: Mapping[str, Any]) -> dict[str, Any]:
    """An ``api_retry`` message of the CLI for ``provider_details`` (logged at WARNING)."""
    retry = {key: _jsonable(data[key]) for key in _RETRY_FIELDS if data.get(key) is not None}
    delay = retry.get("retry_delay_ms")
    logger.warning(
        "Claude Code retries an API request (attempt %s of %s after %s%s)",
        retry.get("attempt", "?"),
        retry.get("max_retries", "?"),
        retry.get("error", "an error"),
        f", in {delay / 1000:.1f} s" if isinstance(delay, int | float) else "",
    )
    return retry


def rate_limit_details(event: RateLimitEvent) -> dict[str, Any]:
    """A rate-limit state for ``provider_details`` (logged: at WARNING when close to or over the limit)."""
    info = event.rate_limit_info
    state = {
        "status": info.status,
        "type": info.rate_limit_type,
        "utilization": info.utilization,
        "resets_at": info.resets_at,
        "overage_status": info.overage_status,
        "overage_resets_at": info.overage_resets_at,
        "overage_disabled_reason": info.overage_disabled_reason,
    }
    state = {key: value for key, value in state.items() if value is not None}
    # A warning is news once per program and limit window (then INFO); a rejection always is.
    window = (info.rate_limit_type, info.resets_at)
    first_warning = info.status == "allowed_warning" and window not in _WARNED
    if first_warning:
        _WARNED.add(window)
    level = logging.WARNING if first_warning or info.status == "rejected" else logging.INFO
    utilization = f"{info.utilization:.0%}" if info.utilization is not None else "unknown"
    resets = datetime.fromtimestamp(info.resets_at, UTC).isoformat(timespec="minutes") if info.resets_at else None
    logger.log(
        level,
        "Claude Code reports its rate limit %s: %s (%s used%s)",
        info.rate_limit_type or "",
        info.status,
        utilization,
        f", resets at {resets}" if resets else "",
    )
    return state


_WARNED: set[tuple[str | None, int | None]] = set()
"""The limit windows (type, reset time) whose first ``allowed_warning`` the program logged at WARNING."""


def request_usage(usage: Mapping[str, Any]) -> RequestUsage:
    """pydantic-ai usage from an Anthropic ``usage`` object (missing or null counts are zero)."""
    return RequestUsage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(usage.get("cache_creation_input_tokens") or 0),
    )


def _tool_result_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = [str(item.get("text", "")) for item in content if item.get("type") == "text"]
    return "\n".join(texts)


def _jsonable(value: Any) -> Any:
    """A JSON-ready copy of ``value``: mappings and sequences copied, keys and unknown values as strings."""
    match value:
        case str() | int() | float() | bool() | None:
            return value
        case Mapping():
            return {str(key): _jsonable(item) for key, item in value.items()}
        case list() | tuple():
            return [_jsonable(item) for item in value]
        case _:
            return str(value)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
