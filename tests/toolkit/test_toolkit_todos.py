"""The planning tools: full replace, statuses, at most one in progress, the summary, run or session state."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.messages import (
    TextPart,
    ToolCallPart,
)

from claudecode_model.toolkit import TodoItem, TodoList, todo_summary, todo_toolset
from tests._support.brains import Script

pytestmark = pytest.mark.filterwarnings("error")


def write(*items: tuple[str, str]) -> ToolCallPart:
    return ToolCallPart("write_todos", {"todos": [{"content": c, "status": s} for c, s in items]})


READ = ToolCallPart("read_todos", {})


def item(content: str, status: Any = "pending") -> TodoItem:
    return TodoItem(content=content, status=status)


# --- the rules -------------------------------------------------------------------------------------------


def test_summary_counts_and_next_item() -> None:
    assert todo_summary([]) == "0 todos (0 completed, 0 in progress, 0 pending). Next: none"
    assert todo_summary([item("Plan")]) == "1 todo (0 completed, 0 in progress, 1 pending). Next: Plan"
    todos = [item("Plan", "completed"), item("Build"), item("Test", "in_progress"), item("Ship")]
    # The item in progress comes next, even after a pending one.
    assert todo_summary(todos) == "4 todos (1 completed, 1 in progress, 2 pending). Next: Test"
    assert todo_summary([item("Plan", "completed"), item("Build"), item("Ship")]).endswith("Next: Build")
    assert todo_summary([item("Plan", "completed")]).endswith("Next: none")


def test_items_are_validated() -> None:
    with pytest.raises(ValidationError):
        TodoItem(content="", status="pending")
    with pytest.raises(ValidationError):
        TodoItem(content="x", status="blocked")  # type: ignore[arg-type]  # an unknown status, on purpose
    assert item("x").status == "pending"


def test_list_rules() -> None:
    todos = TodoList([item("a", "in_progress")])
    with pytest.raises(ValueError, match="at most one todo may be in_progress"):
        todos.replace([item("a", "in_progress"), item("b", "in_progress")])
    assert todos.items == (item("a", "in_progress"),)  # unchanged
    todos.replace([item("c")])
    assert todos.items == (item("c"),)  # a full replace
    assert todos.render() == "1. [pending] c\n1 todo (0 completed, 0 in progress, 1 pending). Next: c"
    with pytest.raises(ValueError, match="at most one"):
        TodoList([item("a", "in_progress"), item("b", "in_progress")])


# --- through an agent ------------------------------------------------------------------------------------


async def test_write_replaces_and_read_shows_the_list() -> None:
    script = Script(
        [write(("Plan", "completed"), ("Build", "in_progress"), ("Ship", "pending"))],
        [write(("Build", "completed"), ("Ship", "in_progress")), READ],
        [TextPart("ok")],
    )
    await Agent(script.model, toolsets=[todo_toolset()]).run("work")
    (first,) = script.returns(1)
    assert first.content == "3 todos (1 completed, 1 in progress, 1 pending). Next: Build"
    written, read = script.returns(2)
    assert written.content == "2 todos (1 completed, 1 in progress, 0 pending). Next: Ship"
    assert read.content == (
        "1. [completed] Build\n2. [in_progress] Ship\n2 todos (1 completed, 1 in progress, 0 pending). Next: Ship"
    )


async def test_two_in_progress_is_a_validation_error_and_nothing_changes() -> None:
    script = Script(
        [write(("A", "in_progress"))],
        [write(("A", "in_progress"), ("B", "in_progress"))],
        [READ],
        [TextPart("ok")],
    )
    await Agent(script.model, toolsets=[todo_toolset()], retries=2).run("work")
    (rejected,) = script.returns(2)
    assert rejected.outcome == "retried"
    assert rejected.retry is not None
    assert rejected.retry.cause == "validation_error"
    assert "at most one todo may be in_progress" in rejected.model_response_str(wrap_if_error=False)
    (read,) = script.returns(3)
    assert read.content == "1. [in_progress] A\n1 todo (0 completed, 1 in progress, 0 pending). Next: A"


async def test_state_is_per_run_by_default() -> None:
    agent = Agent(Script().model, toolsets=[todo_toolset()])
    first = Script([write(("Remember me", "pending"))], [TextPart("ok")])
    await agent.run("one", model=first.model)
    second = Script([READ], [TextPart("ok")])
    await agent.run("two", model=second.model)
    assert second.returns(1)[0].content == "0 todos (0 completed, 0 in progress, 0 pending). Next: none"


async def test_concurrent_runs_have_separate_lists() -> None:
    both_written = asyncio.Barrier(2)
    agent = Agent(Script().model, toolsets=[todo_toolset()])

    @agent.tool_plain
    async def sync_point() -> str:
        await both_written.wait()  # both runs have written their list before either reads
        return "synced"

    async def run(name: str) -> str:
        script = Script([write((name, "in_progress"))], [ToolCallPart("sync_point", {})], [READ], [TextPart("ok")])
        await agent.run(name, model=script.model)
        return str(script.returns(3)[0].content).split("\n")[0]

    assert await asyncio.gather(run("A"), run("B")) == ["1. [in_progress] A", "1. [in_progress] B"]


async def test_a_shared_list_keeps_todos_across_runs() -> None:
    session = TodoList()
    agent = Agent(Script().model, toolsets=[todo_toolset(session)])
    await agent.run("one", model=Script([write(("Remember me", "pending"))], [TextPart("ok")]).model)
    second = Script([READ], [TextPart("ok")])
    await agent.run("two", model=second.model)
    listed = second.returns(1)[0].content
    assert isinstance(listed, str)
    assert listed.startswith("1. [pending] Remember me\n")
    assert session.items == (item("Remember me"),)
