"""An in-memory Claude Code CLI: scripted turns through the session's transport, no process, no backend.

``ClaudeCodeModel(cli_transports=ScriptedCLI([...]))`` runs every session of the model on a :class:`ScriptedCLI`:
it answers the SDK's control requests (``initialize``, ``interrupt``, ``claim_session`` to a CLI started with
``--await-claim``, ``rewind_conversation`` to a user message it received, the rest with an empty success) and plays one
turn of the script per user message, with the stream-json messages the real CLI sends (stream events, assistant
messages, tool results, a result). A tool call of a reply whose name is ``mcp__<server>__<tool>`` goes to that
in-process MCP server (``mcp_message``), and its result is the next user message, as the CLI does. It is what
``httpx.MockTransport`` is to httpx: the seam is real, the far side is a script. The real CLI with the offline
backend (:class:`~claudecode_model.testing.OfflineBackend`) remains the test of what the CLI itself does.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from anyio.abc import Process
from claude_agent_sdk import ClaudeAgentOptions, ProcessError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from claudecode_model._sessions.transport import CLITransport, CLITransports

__all__ = ["CLIStep", "Crash", "ScriptedCLI", "Stall"]


@dataclass(frozen=True)
class Stall:
    """The CLI says nothing for ``seconds`` (forever by default: until interrupted or stopped)."""

    seconds: float = math.inf


@dataclass(frozen=True)
class Crash:
    """The CLI dies with ``exit_code`` (its message stream ends with the SDK's ``ProcessError``)."""

    exit_code: int = 1


CLIStep: TypeAlias = (
    ModelResponse | str | Stall | Crash | Mapping[str, Any] | Callable[[list[str]], "ModelResponse | str"]
)
"""One step of a scripted turn: an API reply (a response, or its text) the CLI streams, a pause, the CLI's death,
a raw stream-json message sent as it is, or a function of the turn's tool results so far (their texts) that returns
the reply. A turn whose steps end without a ``result`` message gets a successful one."""

Turn: TypeAlias = str | Sequence[CLIStep]
"""A turn's steps (a string: one text reply)."""


@dataclass
class ScriptedCLI(CLITransports):
    """Scripted CLIs: each user message any of its sessions receives plays the next turn of ``turns`` (or what
    ``turns`` returns for the message); it records what it received."""

    turns: Sequence[Turn] | Callable[[dict[str, Any]], Turn]
    cost_per_reply: float = 0.001
    """The cost each reply adds to a session's cumulative ``total_cost_usd``."""
    received: list[dict[str, Any]] = field(default_factory=list)
    """The user messages the sessions received, in order."""
    opened: list[ClaudeAgentOptions] = field(default_factory=list)
    """The options of each session opened."""
    controls: list[dict[str, Any]] = field(default_factory=list)
    """The control requests the sessions received, in order."""
    refuse_claims: str | None = None
    """The reason every ``claim_session`` is refused with (as the CLI's error), or ``None``: a parked CLI takes the
    first claim."""
    refuse_rewinds: str | None = None
    """The reason every ``rewind_conversation`` is refused with (``rewound: false``), or ``None``: a CLI rewinds to
    any user message it received (and refuses an unknown one, as the CLI does)."""
    most_live: int = field(default=0, init=False)
    """The most scripted CLIs that ran at once."""
    _next: int = field(default=0, init=False)
    _live: set[ScriptedTransport] = field(default_factory=set, init=False)

    @property
    def live(self) -> int:
        """How many scripted CLIs run (connected and not ended)."""
        return len(self._live)

    def open(self, options: ClaudeAgentOptions) -> CLITransport:
        self.opened.append(options)
        return ScriptedTransport(self, options)

    def _turn_for(self, message: dict[str, Any]) -> list[CLIStep]:
        self.received.append(message)
        if callable(self.turns):
            turn = self.turns(message)
        else:
            if self._next >= len(self.turns):
                raise AssertionError(f"the scripted CLI has {len(self.turns)} turn(s); message #{self._next + 1} came")
            turn, self._next = self.turns[self._next], self._next + 1
        return [turn] if isinstance(turn, str) else list(turn)


_End = ProcessError | None


class ScriptedTransport(CLITransport):
    """One scripted CLI (see :class:`ScriptedCLI`)."""

    def __init__(self, script: ScriptedCLI, options: ClaudeAgentOptions) -> None:
        self._script = script
        self._options = options
        self.session_id = options.resume if options.resume and not options.fork_session else str(uuid.uuid4())
        self._out: asyncio.Queue[dict[str, Any] | _End] = asyncio.Queue()
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._initialized: set[str] = set()
        self._player: asyncio.Task[None] | None = None
        self._playing: asyncio.Task[None] | None = None
        self._ended = False
        self._ended_at_once = False
        self._cost = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._parked = "await-claim" in options.extra_args
        """Started as a parked spare: it takes one claim."""
        self._user_uuids: list[str] = []
        """The uuids of the user messages of the conversation (a rewind goes back to one)."""

    @property
    def process(self) -> Process | None:
        return None

    def stopped(self, *, force: bool) -> None:
        self._ended_at_once = True
        self._script._live.discard(self)
        ending = ProcessError("Command failed", exit_code=-9 if force else -15)
        if self._loop is None or _running_loop() is self._loop:
            self._end(ending)
        else:  # from the pool's clock thread: as a signal, it takes effect at once
            self._loop.call_soon_threadsafe(self._end, ending)

    @property
    def ended(self) -> bool:
        return self._ended or self._ended_at_once

    async def connect(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._script._live.add(self)
        self._script.most_live = max(self._script.most_live, len(self._script._live))
        self._player = asyncio.get_running_loop().create_task(self._play_turns())

    def is_ready(self) -> bool:
        return self._player is not None and not self._ended

    async def write(self, data: str) -> None:
        if self._ended:
            raise ProcessError("the scripted CLI has ended", exit_code=1)
        message = json.loads(data)
        match message.get("type"):
            case "control_request":
                self._control(message["request_id"], message["request"])
            case "control_response":
                response = message["response"]
                future = self._pending.pop(response.get("request_id"), None)
                if future is not None and not future.done():
                    future.set_result(response)
            case "user":
                if isinstance(message.get("uuid"), str):
                    self._user_uuids.append(message["uuid"])
                self._inbox.put_nowait(message)
            case _:
                pass

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (item := await self._out.get()) is not None:
            if isinstance(item, ProcessError):
                raise item
            yield item

    async def end_input(self) -> None:
        self._inbox.put_nowait(None)

    async def close(self) -> None:
        self._end(None)
        for task in (self._playing, self._player):
            if task is not None:
                task.cancel()

    def _end(self, how: _End) -> None:
        if self._ended:
            return
        self._ended = True
        self._script._live.discard(self)
        if self._playing is not None:
            self._playing.cancel()
        self._out.put_nowait(how)

    def _send(self, message: dict[str, Any]) -> None:
        if not self._ended:
            self._out.put_nowait({"session_id": self.session_id, "uuid": str(uuid.uuid4()), **message})

    def _control(self, request_id: str, request: Mapping[str, Any]) -> None:
        self._script.controls.append(dict(request))
        response: dict[str, Any] = {}
        match request.get("subtype"):
            case "interrupt" if self._playing is not None:
                self._playing.cancel()
            case "initialize":
                response = {"commands": [], "pid": None}
            case "claim_session":
                refusal = self._script.refuse_claims or (None if self._parked else "not_a_spare")
                if refusal is not None:
                    self._send_raw({"subtype": "error", "request_id": request_id, "error": refusal})
                    return
                self._parked = False
                response = {"status": "ok", "cwd": request.get("cwd"), "session_id": self.session_id}
            case "rewind_conversation":
                response = self._rewind(request.get("target_message_uuid"))
            case _:
                pass
        self._send_raw({"subtype": "success", "request_id": request_id, "response": response})

    def _rewind(self, target: object) -> dict[str, Any]:
        if (refusal := self._script.refuse_rewinds) is not None:
            return {"rewound": False, "error": refusal, "reason": refusal}
        if target not in self._user_uuids:
            return {"rewound": False, "error": "target not found", "reason": "target_not_found"}
        assert isinstance(target, str)
        del self._user_uuids[self._user_uuids.index(target) :]
        return {"rewound": True, "targetMessageUuid": target, "precedingAssistantUuid": None}

    def _send_raw(self, response: dict[str, Any]) -> None:
        if not self._ended:
            self._out.put_nowait({"type": "control_response", "response": response})

    async def _play_turns(self) -> None:
        while (message := await self._inbox.get()) is not None:
            steps = self._script._turn_for(message)
            self._playing = asyncio.get_running_loop().create_task(self._play(steps))
            try:
                await asyncio.shield(self._playing)
            except asyncio.CancelledError:
                if self._ended:
                    return
                self._result("error_during_execution", is_error=True, text="")  # interrupted
        self._end(None)  # end of input: the CLI exits

    async def _play(self, steps: list[CLIStep]) -> None:
        self._send({"type": "system", "subtype": "init", "tools": [], "mcp_servers": [], "model": "scripted"})
        text = ""
        results: list[str] = []
        for step in steps:
            if callable(step):
                step = step(list(results))
            match step:
                case Stall(seconds=seconds):
                    await asyncio.sleep(seconds if math.isfinite(seconds) else 1e9)
                case Crash(exit_code=code):
                    self._end(ProcessError(f"Command failed with exit code {code}", exit_code=code))
                    await asyncio.sleep(1e9)
                case str() | ModelResponse():
                    response = ModelResponse(parts=[TextPart(step)]) if isinstance(step, str) else step
                    text = await self._reply(response, results) or text
                case Mapping() if step.get("type") == "result":
                    self._send(dict(step))
                    return
                case Mapping():
                    self._send(dict(step))
        self._result("success", is_error=False, text=text)

    def _result(self, subtype: str, *, is_error: bool, text: str) -> None:
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        self._send(
            {
                "type": "result",
                "subtype": subtype,
                "is_error": is_error,
                "duration_ms": 1,
                "duration_api_ms": 1,
                "num_turns": 1,
                "result": text,
                "stop_reason": "end_turn",
                "total_cost_usd": self._cost,
                "usage": usage,
            }
        )

    async def _reply(self, response: ModelResponse, results: list[str]) -> str:
        """Stream one API reply as the CLI does; call its MCP tools and send their results. Its text."""
        self._cost += self._script.cost_per_reply
        message_id = f"msg_{uuid.uuid4().hex[:12]}"
        calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
        usage = {"input_tokens": 10, "output_tokens": 1}
        self._event({"type": "message_start", "message": {"id": message_id, "model": "scripted", "usage": usage}})
        blocks = [_block(part) for part in response.parts if isinstance(part, TextPart | ToolCallPart)]
        for index, block in enumerate(blocks):
            start = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
            self._event({"type": "content_block_start", "index": index, "content_block": start})
            delta = (
                {"type": "text_delta", "text": block["text"]}
                if block["type"] == "text"
                else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            )
            self._event({"type": "content_block_delta", "index": index, "delta": delta})
            self._event({"type": "content_block_stop", "index": index})
            content = {"id": message_id, "model": "scripted", "role": "assistant", "content": [block], "usage": usage}
            self._send({"type": "assistant", "message": content, "parent_tool_use_id": None})
        stop_reason = "tool_use" if calls else "end_turn"
        self._event({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}})
        self._event({"type": "message_stop"})
        for call in calls:
            result = await self._call_tool(call)
            results.append("".join(item.get("text", "") for item in result["content"] if isinstance(item, dict)))
            self._send({"type": "user", "message": {"role": "user", "content": [result]}, "parent_tool_use_id": None})
        return "".join(part.content for part in response.parts if isinstance(part, TextPart))

    def _event(self, event: dict[str, Any]) -> None:
        self._send({"type": "stream_event", "event": event, "parent_tool_use_id": None})

    async def _call_tool(self, call: ToolCallPart) -> dict[str, Any]:
        _, server, tool = call.tool_name.split("__", 2) if call.tool_name.startswith("mcp__") else ("", "", "")
        result: dict[str, Any] = {"isError": True, "content": [{"type": "text", "text": f"No such tool {tool}"}]}
        if server:
            if server not in self._initialized:
                self._initialized.add(server)
                await self._mcp(server, "initialize", _MCP_INITIALIZE)
                await self._mcp(server, "notifications/initialized", None)
            meta = {"claudecode/toolUseId": call.tool_call_id}
            params = {"name": tool, "arguments": call.args_as_dict(), "_meta": meta}
            answer = await self._mcp(server, "tools/call", params)
            result = answer.get("result") or {"isError": True, "content": [{"type": "text", "text": str(answer)}]}
        return {
            "type": "tool_result",
            "tool_use_id": call.tool_call_id,
            "content": result.get("content", []),
            "is_error": bool(result.get("isError")),
        }

    async def _mcp(self, server: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a JSON-RPC message to the SDK's in-process server ``server``; its answer (``{}`` for a
        notification)."""
        request_id = f"scripted_{uuid.uuid4().hex[:8]}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message |= {"id": request_id, "params": params}
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        request = {"subtype": "mcp_message", "server_name": server, "message": message}
        self._out.put_nowait({"type": "control_request", "request_id": request_id, "request": request})
        response = await future
        answer = response.get("response", {}).get("mcp_response", {})
        return answer if isinstance(answer, dict) else {}


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_MCP_INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "scripted-cli", "version": "0"},
}


def _block(part: TextPart | ToolCallPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.content}
    return {"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name, "input": part.args_as_dict()}
