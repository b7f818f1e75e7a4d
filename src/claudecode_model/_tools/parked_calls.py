"""The tool calls of a CLI session waiting while pydantic-ai runs them.

When Claude's reply calls the agent's own tools, the model request returns those calls to pydantic-ai and the CLI
turn waits (parked: :mod:`claudecode_model._turns.parking_lot`): the CLI has already invoked (or will invoke) the
MCP handler of each call, and each handler waits for its result here, keyed by the Anthropic ``tool_use`` id the CLI
sends in ``_meta``. The next model request carries pydantic-ai's results; they resolve the waiting handlers and the
same CLI turn goes on.

:class:`CallResults` belongs to one CLI session: the results of its calls, whichever side comes first (the CLI calls
a handler as soon as its ``tool_use`` block is complete, but calls tools without ``readOnlyHint`` one at a time, so a
result may well arrive before its handler is called).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from claudecode_model._tools.core import McpResponse, text_result

__all__ = ["CallResults", "closed_result"]

CLOSED_TEXT = "The tool call was not executed: the agent run that owned it ended before it produced a result."


def closed_result(text: str = CLOSED_TEXT) -> McpResponse:
    """The error result a waiting handler gets when its turn is closed without a result."""
    return text_result(text, is_error=True)


class CallResults:
    """Results of the tool calls one CLI session waits for, keyed by ``tool_use`` id.

    :meth:`wait` (the MCP handler) and :meth:`resolve` (the next model request) may come in either order. An id is
    forgotten once its handler has taken the result. After :meth:`close`, every waiting handler, and any handler
    called later, gets the closing result at once.
    """

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[McpResponse]] = {}
        self._waiting: set[str] = set()
        self._closed: McpResponse | None = None
        self._on_wait: Callable[[frozenset[str]], None] | None = None

    def tell_waits(self, on_wait: Callable[[frozenset[str]], None]) -> None:
        """Tell ``on_wait`` the ids waiting now whenever a handler starts waiting (the session passes it to the
        turn)."""
        self._on_wait = on_wait

    def _future(self, tool_use_id: str) -> asyncio.Future[McpResponse]:
        future = self._futures.get(tool_use_id)
        if future is None:
            future = self._futures[tool_use_id] = asyncio.get_running_loop().create_future()
        return future

    @property
    def waiting(self) -> frozenset[str]:
        """The ids whose handlers are waiting now."""
        return frozenset(self._waiting)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed is not None

    def has_result(self, tool_use_id: str) -> bool:
        """Whether a result for ``tool_use_id`` is ready and not taken yet."""
        future = self._futures.get(tool_use_id)
        return future is not None and future.done()

    async def wait(self, tool_use_id: str) -> McpResponse:
        """Wait for the result of ``tool_use_id`` (the handler's side); cancellation leaves the id pending."""
        if self._closed is not None:
            return self._closed
        future = self._future(tool_use_id)
        self._waiting.add(tool_use_id)
        if self._on_wait is not None and not future.done():
            self._on_wait(frozenset(self._waiting))
        try:
            result = await asyncio.shield(future)
        finally:
            self._waiting.discard(tool_use_id)
        self._futures.pop(tool_use_id, None)
        return result

    def resolve(self, tool_use_id: str, result: McpResponse) -> bool:
        """Deliver the result of ``tool_use_id``; ``False`` if it already had one or the results are closed."""
        if self._closed is not None:
            return False
        future = self._future(tool_use_id)
        if future.done():
            return False
        future.set_result(result)
        return True

    def close(self, result: McpResponse | None = None) -> None:
        """Answer every waiting handler, and every later one, with ``result`` (a "not executed" error)."""
        if self._closed is not None:
            return
        self._closed = result or closed_result()
        for future in self._futures.values():
            if not future.done():
                future.set_result(self._closed)
        self._futures.clear()
