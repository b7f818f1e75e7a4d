"""The standard planning tools ``write_todos`` and ``read_todos``."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from pydantic_ai import RunContext

__all__ = [
    "READ_TODOS_NAME",
    "WRITE_TODOS_NAME",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "TodoToolset",
    "todo_summary",
    "todo_toolset",
]

WRITE_TODOS_NAME = "write_todos"
READ_TODOS_NAME = "read_todos"

TodoStatus: TypeAlias = Literal["pending", "in_progress", "completed"]


class TodoItem(BaseModel):
    """One step of the plan."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str = Field(min_length=1, description="What to do, as a short imperative sentence.")
    status: TodoStatus = Field(default="pending", description="pending, in_progress (at most one) or completed.")


def _at_most_one_in_progress(items: list[TodoItem]) -> list[TodoItem]:
    in_progress = [item.content for item in items if item.status == "in_progress"]
    if len(in_progress) > 1:
        raise ValueError(f"at most one todo may be in_progress, got {len(in_progress)}: {in_progress}")
    return items


TodoItems: TypeAlias = Annotated[list[TodoItem], AfterValidator(_at_most_one_in_progress)]


def todo_summary(items: Sequence[TodoItem]) -> str:
    """One line: ``3 todos (1 completed, 1 in progress, 1 pending). Next: <item>``.

    The next item is the one in progress, else the first pending one; ``Next: none`` when there is none.
    """
    counts = {
        status: sum(item.status == status for item in items) for status in ("completed", "in_progress", "pending")
    }
    upcoming = next((item for item in items if item.status == "in_progress"), None) or next(
        (item for item in items if item.status == "pending"), None
    )
    noun = "todo" if len(items) == 1 else "todos"
    return (
        f"{len(items)} {noun} ({counts['completed']} completed, {counts['in_progress']} in progress, "
        f"{counts['pending']} pending). Next: {upcoming.content if upcoming else 'none'}"
    )


class TodoList:
    """The todos of a run or, shared between runs, of a session.

    Example:
        ```python
        session_todos = TodoList()
        agent = Agent(model, toolsets=[todo_toolset(session_todos)])  # todos survive across runs
        ```
    """

    def __init__(self, items: Iterable[TodoItem] = ()) -> None:
        self._lock = threading.Lock()
        self._items: tuple[TodoItem, ...] = tuple(_at_most_one_in_progress(list(items)))

    @property
    def items(self) -> tuple[TodoItem, ...]:
        """The current todos, in order."""
        return self._items

    def replace(self, items: Iterable[TodoItem]) -> None:
        """Replace all todos (raises ``ValueError`` when more than one is in progress)."""
        new_items = tuple(_at_most_one_in_progress(list(items)))
        with self._lock:
            self._items = new_items

    def summary(self) -> str:
        """See :func:`todo_summary`."""
        return todo_summary(self._items)

    def render(self) -> str:
        """One numbered line per todo (``2. [in_progress] Write tests``), then the summary line."""
        lines = [f"{index}. [{item.status}] {item.content}" for index, item in enumerate(self._items, start=1)]
        return "\n".join([*lines, self.summary()])


class TodoToolset(FunctionToolset[Any]):
    """The planning tools ``write_todos(todos)`` (full replace) and ``read_todos()``.

    Without ``store`` each agent run gets its own empty list; with a :class:`TodoList` the todos are shared by
    all runs using this toolset (a session). More than one ``in_progress`` item is a validation error the
    model is asked to fix.
    """

    def __init__(self, store: TodoList | None = None) -> None:
        super().__init__()
        self._shared = store is not None
        self.store = TodoList() if store is None else store

        async def write_todos(todos: TodoItems) -> str:
            """Replace the whole todo list with `todos` (the plan for this task) and get a summary back.

            Keep exactly one item in_progress while working, mark items completed as soon as they are done,
            and always send the full list.

            Args:
                todos: Every todo, in order, each with `content` and `status` (pending, in_progress or
                    completed).
            """
            self.store.replace(todos)
            return self.store.summary()

        async def read_todos() -> str:
            """Show the current todo list with a summary line (counts and the next item)."""
            return self.store.render()

        self.add_function(write_todos, name=WRITE_TODOS_NAME)
        self.add_function(read_todos, name=READ_TODOS_NAME)

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        return self if self._shared else TodoToolset()


def todo_toolset(store: TodoList | None = None) -> TodoToolset:
    """The planning tools; todos are kept per run, or in ``store`` across runs.

    Example:
        ```python
        agent = Agent(model, toolsets=[todo_toolset()])
        ```
    """
    return TodoToolset(store)
