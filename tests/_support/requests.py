"""Recorded requests built from a request body, as the offline backend records them (without the HTTP server)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claudecode_model.testing import RecordedRequest
from claudecode_model.testing._request import parse_request


def recorded(body: dict[str, Any], *, path: str = "/v1/messages") -> RecordedRequest:
    """The :class:`RecordedRequest` the backend would record for ``body`` posted to ``path`` (no headers)."""
    parsed = parse_request(body)
    return RecordedRequest(
        raw=body,
        headers={},
        path=path,
        stream=bool(body.get("stream")),
        system="\n\n".join(parsed.system_blocks),
        messages=parsed.messages,
        tools=parsed.tools,
        system_blocks=parsed.system_blocks,
    )


def texts_after_last_tool_result(request: RecordedRequest) -> str:
    """Every text block the request carries after its last ``tool_result`` block, whatever message or role holds it.

    Claude Code hands Claude a message sent during a running turn after the tool results that the turn was waiting
    for, but the framing moves between CLI builds: a separate system note quoting it (2.1.330), or a text block in the
    same user message as the results (2.1.332). Tests assert that the text came after the results, not how.
    """
    texts: list[str] = []
    for message in request.raw.get("messages", []):
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_result":
                texts.clear()
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
    return "\n".join(texts)
