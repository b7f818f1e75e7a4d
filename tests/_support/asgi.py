"""Serving an ASGI app with uvicorn on 127.0.0.1, in the running event loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn


@asynccontextmanager
async def serve_asgi(
    app: Any, *, lifespan: Literal["on", "off"] = "off", graceful_shutdown: int | None = None
) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 until the block ends; yields its base URL.

    ``lifespan="on"`` runs the app's start-up and shut-down (an MCP server's session manager needs it);
    ``graceful_shutdown`` bounds how long open connections are waited for at the end.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, timeout_graceful_shutdown=graceful_shutdown)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
