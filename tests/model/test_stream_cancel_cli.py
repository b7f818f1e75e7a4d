"""Cancelling a stream stops the Claude Code CLI at once, leaks nothing, and leaves the model usable (the request
timeouts mid-answer and before the first event are tested on the in-memory CLI, ``test_stream_cancel.py``).

The backend holds each stream after a few deltas (``hold_next_stream``), so every cancellation here provably
happens while Claude is still answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRequestTimeout
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from claudecode_model import ClaudeCodeModel
from claudecode_model.testing import OfflineBackend
from tests._support.polling import wait_for
from tests._support.processes import is_alive, live_children

if TYPE_CHECKING:
    from claudecode_model._process.slots import ProcessSlots

pytestmark = pytest.mark.cli

LONG_TEXT = "This answer is long enough to be cancelled well before its last word reaches the caller."


def cli_processes() -> set[int]:
    """Live child processes of this test process that run the Claude Code CLI."""
    return {process.pid for process in live_children() if "claude" in "\0".join(process.argv)}


@pytest.fixture
async def model(claude_backend: OfflineBackend) -> AsyncIterator[ClaudeCodeModel]:
    claude_backend.set_brain(LONG_TEXT)
    claude_backend.text_chunk_size = 4
    model = ClaudeCodeModel(env=claude_backend.cli_env(), settings={"claude_code_timeout": 60})
    yield model
    await model.aclose()


async def assert_still_works(model: ClaudeCodeModel, backend: OfflineBackend) -> None:
    requests_before = len(backend.requests)
    result = await Agent(model).run("once more, in full")
    assert result.output == LONG_TEXT
    assert len(backend.requests) == requests_before + 1


async def assert_stopped_and_still_works(running: set[int], model: ClaudeCodeModel, backend: OfflineBackend) -> None:
    """The CLIs seen while streaming are gone, and the model serves the next run."""
    assert running
    assert not any(is_alive(pid) for pid in running)
    await assert_still_works(model, backend)


async def test_cancel_stops_the_cli_and_records_the_interrupted_response(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    gate = claude_backend.hold_next_stream(after_deltas=3)
    agent = Agent(model)
    chunks: list[str] = []
    running: set[int] = set()

    async with agent.run_stream("tell me everything") as stream:
        async for text in stream.stream_text(delta=True, debounce_by=None):
            chunks.append(text)
            if len(chunks) == 2:
                running = cli_processes()
                await stream.cancel()
        assert stream.cancelled
        assert running
        assert not any(is_alive(pid) for pid in running)
    gate.set()

    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.state == "interrupted"
    assert response.parts == [TextPart("".join(chunks))]
    assert LONG_TEXT.startswith("".join(chunks))
    assert "".join(chunks) != LONG_TEXT
    await assert_still_works(model, claude_backend)


async def test_leaving_run_stream_early_stops_the_cli(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    gate = claude_backend.hold_next_stream(after_deltas=3)
    agent = Agent(model)
    running: set[int] = set()

    async with agent.run_stream("tell me everything") as stream:
        async for _ in stream.stream_text(delta=True, debounce_by=None):
            running = cli_processes()
            break
    gate.set()

    assert running
    assert not any(is_alive(pid) for pid in running)
    assert not cli_processes()
    await assert_still_works(model, claude_backend)


async def test_leaving_run_stream_events_early_stops_the_cli(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    gate = claude_backend.hold_next_stream(after_deltas=3)
    running: set[int] = set()

    async with Agent(model).run_stream_events("tell me everything") as events:
        async for _ in events:
            if running := cli_processes():
                break
    gate.set()

    await assert_stopped_and_still_works(running, model, claude_backend)


async def test_cancelling_the_task_stops_the_cli(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    gate = claude_backend.hold_next_stream(after_deltas=3)
    agent = Agent(model)
    streaming = asyncio.Event()

    async def consume() -> None:
        async with agent.run_stream("tell me everything") as stream:
            async for _ in stream.stream_text(delta=True, debounce_by=None):
                streaming.set()

    task = asyncio.create_task(consume())
    await streaming.wait()
    running = cli_processes()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()

    await assert_stopped_and_still_works(running, model, claude_backend)


async def test_model_level_stream_cancel(model: ClaudeCodeModel, claude_backend: OfflineBackend):
    gate = claude_backend.hold_next_stream(after_deltas=3)
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("tell me everything")])]
    events = 0
    running: set[int] = set()

    async with model.request_stream(messages, None, ModelRequestParameters()) as stream:
        async for _ in stream:
            events += 1
            if events == 2:
                running = cli_processes()
                await stream.cancel()
        response = stream.get()
    gate.set()

    assert running
    assert not any(is_alive(pid) for pid in running)
    assert response.state == "interrupted"
    assert isinstance(response.parts[0], TextPart)
    assert LONG_TEXT.startswith(response.parts[0].content)
    await stream.cancel()  # a second cancel is a no-op
    await assert_still_works(model, claude_backend)


async def test_history_with_an_interrupted_response_can_continue(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    gate = claude_backend.hold_next_stream(after_deltas=2)
    agent = Agent(model)
    async with agent.run_stream("tell me everything") as stream:
        async for _ in stream.stream_text(delta=True, debounce_by=None):
            await stream.cancel()
    gate.set()

    follow_up = await agent.run("go on", message_history=stream.all_messages())

    assert follow_up.output == LONG_TEXT
    assert claude_backend.requests[-1].user_texts()[-1] == "go on"
    assert "tell me everything" in claude_backend.requests[-1].user_texts()


@contextlib.contextmanager
def start_slots_all_taken() -> Iterator[ProcessSlots]:
    """The process's CLI start slots all taken (as by other CLIs starting) for the block, then given back."""
    from claudecode_model._process.slots import starting_slots

    gate = starting_slots()
    taken = 0
    while gate.try_acquire():
        taken += 1
    try:
        yield gate
    finally:
        for _ in range(taken):
            gate.release()


async def test_request_timeout_while_the_cli_starts_leaves_no_process(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    with pytest.raises(ModelRequestTimeout):
        await Agent(model).run("hello", model_settings={"request_timeout": 0.2})

    assert not cli_processes()
    await assert_still_works(model, claude_backend)


async def test_a_request_cancelled_while_it_waits_for_a_start_slot_spawns_no_cli_afterwards(
    model: ClaudeCodeModel, claude_backend: OfflineBackend
):
    """The start slots are all taken (other CLIs starting): the request is cancelled (a timeout does the same) while
    its session waits for one. Once the slots are free the session takes one, sees its start was given up, and
    spawns nothing (it used to start a CLI 0.4-0.75 s after the timeout, which lived about 1.5 s)."""
    with start_slots_all_taken() as gate:
        run = asyncio.create_task(Agent(model).run("hello", model_settings={"request_timeout": 60}))
        assert await wait_for(lambda: gate.waiting == 1)  # its session waits for a start slot
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        seen: set[int] = set()

        async def watch() -> None:
            while True:
                seen.update(cli_processes())
                await asyncio.sleep(0.01)

        watcher = asyncio.create_task(watch())

    def session_tasks() -> list[asyncio.Task[object]]:
        return [task for task in asyncio.all_tasks() if task.get_name().startswith("claude-code-session-")]

    assert await wait_for(lambda: not session_tasks())  # the given-up session took its slot and ended
    watcher.cancel()
    assert not seen  # no CLI was ever spawned for it
    assert claude_backend.requests == []
    await assert_still_works(model, claude_backend)


async def test_a_start_given_up_leaves_no_temp_folder_even_if_the_loop_ends_at_once(claude_backend: OfflineBackend):
    """Its private temp folder is removed before the error is raised, not only by the background close (which never
    runs when the event loop closes right after the error)."""
    import tempfile

    from claudecode_model._process.temp import CLI_TEMP_PREFIX

    def cli_folders() -> set[str]:
        return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(CLI_TEMP_PREFIX)}

    claude_backend.set_brain(LONG_TEXT)
    # Without the backend's CLAUDE_CODE_TMPDIR, so that the CLI gets a private temp folder.
    env = {name: value for name, value in claude_backend.cli_env().items() if name != "CLAUDE_CODE_TMPDIR"}
    model = ClaudeCodeModel(env=env, spare_sessions=0)
    before = cli_folders()
    with start_slots_all_taken() as gate:
        run = asyncio.create_task(Agent(model).run("hello", model_settings={"request_timeout": 60}))
        assert await wait_for(lambda: gate.waiting == 1)  # its session (and its temp folder) exists, waiting
        assert cli_folders() - before
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert not (cli_folders() - before)  # checked before any other await: nothing else ran meanwhile
    try:
        await assert_still_works(model, claude_backend)
    finally:
        await model.aclose()
