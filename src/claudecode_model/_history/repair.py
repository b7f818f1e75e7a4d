"""Repairing a broken message history before it reaches Claude, saying what was changed.

The API refuses a conversation whose tool results do not follow their tool calls, or whose tool call ids repeat.
Histories edited by hand, trimmed by a history processor, or stitched together from storage can be that way. Such
a history is repaired, never silently: each change is logged at WARNING.

- A tool result (or retry prompt) whose call is not earlier in the history is dropped.
- A second result for the same call is dropped (except the output of an approved built-in call, which follows
  the approval).
- A tool call id used again by a later call is renamed (``<id>~2``), and the results that follow it with that id
  are renamed with it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    NativeToolReturnPart,
    RetryPromptPart,
)

from claudecode_model._history.details import APPROVED_CALL_KEY

__all__ = ["repair_history"]

logger = logging.getLogger(__name__)


class _Repair:
    def __init__(self) -> None:
        self.current: dict[str, str] = {}
        """The id results carrying an original call id now refer to (renamed after a repeated id)."""
        self.uses: dict[str, int] = {}
        self.answered: set[str] = set()
        self.outputs: set[str] = set()
        """Approved built-in calls whose output (a second result) was seen."""
        self.changed = False

    def call(self, part: BaseToolCallPart) -> BaseToolCallPart:
        original = part.tool_call_id
        count = self.uses.get(original, 0) + 1
        self.uses[original] = count
        if count == 1:
            self.current[original] = original
            return part
        renamed = f"{original}~{count}"
        self.current[original] = renamed
        self.changed = True
        logger.warning(
            "Message history repaired: tool call id %r is used again by a later call of tool %r; "
            "that call and its result were renamed to %r",
            original,
            part.tool_name,
            renamed,
        )
        return dataclasses.replace(part, tool_call_id=renamed)

    def result(self, part: BaseToolReturnPart | RetryPromptPart) -> BaseToolReturnPart | RetryPromptPart | None:
        original = part.tool_call_id
        target = self.current.get(original)
        what = "retry prompt" if isinstance(part, RetryPromptPart) else "result"
        if target is None:
            self.changed = True
            logger.warning(
                "Message history repaired: dropped the %s of tool %r (call id %r): no earlier tool call has that id",
                what,
                part.tool_name,
                original,
            )
            return None
        if target in self.answered and _is_approved_output(part) and target not in self.outputs:
            self.outputs.add(target)
        elif target in self.answered and not isinstance(part, RetryPromptPart):
            self.changed = True
            logger.warning(
                "Message history repaired: dropped a second result of tool %r for call id %r", part.tool_name, original
            )
            return None
        if not isinstance(part, RetryPromptPart):
            self.answered.add(target)
        if target == original:
            return part
        self.changed = True
        return dataclasses.replace(part, tool_call_id=target)


def _is_approved_output(part: BaseToolReturnPart | RetryPromptPart) -> bool:
    return isinstance(part, NativeToolReturnPart) and bool((part.provider_details or {}).get(APPROVED_CALL_KEY))


def repair_history(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """``messages`` with orphaned or repeated tool results dropped and repeated call ids renamed (logged).

    The same list, unchanged, when nothing needed repair.
    """
    repair = _Repair()
    repaired: list[ModelMessage] = []
    for message in messages:
        # The message's parts are copied only from its first changed part on: most histories need no repair, and
        # this runs on the whole history at every request.
        parts: list[Any] | None = None
        for index, part in enumerate(message.parts):
            kept: Any
            match part:
                case BaseToolCallPart():
                    kept = repair.call(part)
                case BaseToolReturnPart() | RetryPromptPart(tool_name=str()):
                    kept = repair.result(part)
                case _:
                    kept = part
            if parts is None:
                if kept is part:
                    continue
                parts = list(message.parts[:index])
            if kept is not None:
                parts.append(kept)
        if parts is None:
            repaired.append(message)
            continue
        if not parts and isinstance(message, ModelRequest) and message.parts:
            logger.warning("Message history repaired: dropped a request left empty by the repair")
            continue
        repaired.append(dataclasses.replace(message, parts=parts))  # type: ignore[arg-type]
    return repaired if repair.changed else list(messages)
