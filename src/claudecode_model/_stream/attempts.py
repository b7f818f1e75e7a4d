"""Aborted attempts: API responses of a turn whose stream was cut, and the response parts they produced.

When the stream of a response is cut (the connection drops, or an SSE ``error`` event arrives) the CLI ends the
stream it relays with ``message_stop`` and no ``message_delta``, and recovers by asking again: the same request
without streaming, or (when part of the answer was complete) a request that asks Claude to resume. What the cut
attempt streamed is then not part of the answer, and the parts built from it are discarded. The attempt is judged
cut only once the CLI goes on with another response, so a turn stopped on purpose mid-response keeps its parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AttemptTracker"]


@dataclass
class _Attempt:
    message_id: str
    part_indices: set[int] = field(default_factory=set)
    tool_call_ids: set[str] = field(default_factory=set)
    finished: bool = False
    """The API said how the response ended (``message_delta``), or the CLI acted on one of its tool calls."""
    stopped: bool = False
    """The relayed stream ended (``message_stop``)."""
    delivered: bool = False
    """The CLI reported a complete block of it: the block stays in the CLI's own conversation."""


class AttemptTracker:
    """Follows the API responses of one turn and tells which response parts belong to aborted attempts."""

    def __init__(self) -> None:
        self._attempts: dict[str, _Attempt] = {}
        self._current: _Attempt | None = None
        self.discarded: set[int] = set()
        """Indices (in the parts manager) of the parts of aborted attempts."""
        self.tainted = False
        """Whether an aborted attempt left content in the CLI's conversation that the response does not hold."""
        self.aborted = 0
        """How many attempts were aborted."""

    def next_response(self) -> None:
        """The turn goes on in a new response (a new parts manager, indices from 0): earlier parts are not its own."""
        self.discarded = set()
        for attempt in self._attempts.values():
            attempt.part_indices.clear()

    def started(self, message_id: str) -> None:
        """A streamed response began: any response cut before it was aborted."""
        self._abort_cut(except_id=message_id)
        self._current = self._attempt(message_id)

    def finished(self) -> None:
        """The current response's ``message_delta`` arrived: it ended normally."""
        if self._current is not None:
            self._current.finished = True

    def stopped(self) -> None:
        """The current response's ``message_stop`` arrived."""
        if self._current is not None:
            self._current.stopped = True

    def delivered(self, message_id: str) -> None:
        """A complete block of ``message_id`` arrived; a response not seen streaming means the CLI went on."""
        if message_id in self._attempts:
            self._attempts[message_id].delivered = True
            return
        self._abort_cut(except_id=message_id)

    def part(self, message_id: str, index: int) -> None:
        """The part at ``index`` was built from ``message_id``."""
        attempt = self._attempts.get(message_id)
        if attempt is not None:
            attempt.part_indices.add(index)

    def tool_call(self, message_id: str, call_id: str) -> None:
        """``message_id`` holds the tool call ``call_id``."""
        attempt = self._attempts.get(message_id)
        if attempt is not None:
            attempt.tool_call_ids.add(call_id)

    def tool_result(self, call_id: str) -> None:
        """The CLI ran the tool call ``call_id``: the response holding it was acted on, not retried."""
        for attempt in self._attempts.values():
            if call_id in attempt.tool_call_ids:
                attempt.finished = True

    def _attempt(self, message_id: str) -> _Attempt:
        attempt = self._attempts.get(message_id)
        if attempt is None:
            attempt = self._attempts[message_id] = _Attempt(message_id)
        return attempt

    def _abort_cut(self, *, except_id: str) -> None:
        for attempt in list(self._attempts.values()):
            if attempt.message_id == except_id or attempt.finished:
                continue
            # Started, not ended normally, and the CLI went on with another response: a cut stream.
            del self._attempts[attempt.message_id]
            self.discarded |= attempt.part_indices
            self.tainted = self.tainted or attempt.delivered
            self.aborted += 1
            if self._current is attempt:
                self._current = None
