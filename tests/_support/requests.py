"""Recorded requests built from a request body, as the offline backend records them (without the HTTP server)."""

from __future__ import annotations

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
