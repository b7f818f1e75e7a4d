"""Dependency keys: values a tool resolves from its ``RunContext``, cached per call or run, overridable."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, cast, overload

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import AgentDepsT

from claudecode_model.exceptions import DependencyResolutionError

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import WrapRunHandler
    from pydantic_ai.run import AgentRunResult

__all__ = ["Dependencies", "DependencyKey", "DependencyResolutionError", "DependencyScope", "override", "resolve"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
DependencyScope: TypeAlias = Literal["call", "run"]
"""How long a resolved value is reused: one tool call (``"call"``) or the whole agent run (``"run"``)."""

_Factory: TypeAlias = Callable[[], Any] | Callable[[RunContext[Any]], Any]


def _takes_ctx(factory: _Factory) -> bool:
    """Whether ``factory`` wants the ``RunContext``: it has one required positional parameter."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature take no context
        return False
    required = [
        p for p in parameters if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) > 1:
        raise TypeError(f"a dependency factory takes no argument or the RunContext, not {len(required)} arguments")
    return len(required) == 1


@dataclass(frozen=True, slots=True)
class _Provider:
    """Where a value comes from: a fixed value, or a factory (sync or async, with or without the context)."""

    value: Any = None
    factory: _Factory | None = None
    takes_ctx: bool = False

    async def produce(self, ctx: RunContext[Any]) -> Any:
        if self.factory is None:
            return self.value
        result = (
            cast("Callable[[RunContext[Any]], Any]", self.factory)(ctx)
            if self.takes_ctx
            else cast("Callable[[], Any]", self.factory)()
        )
        return await result if inspect.isawaitable(result) else result

    @classmethod
    def of_factory(cls, factory: _Factory) -> _Provider:
        return cls(factory=factory, takes_ctx=_takes_ctx(factory))


class DependencyKey(Generic[T]):
    """A named dependency a tool resolves from its ``RunContext``.

    ``factory`` makes the value; it may be sync or async and may take the ``RunContext`` as its only argument.
    The value is reused for the rest of the tool call (``scope="call"``, the default) or of the agent run
    (``scope="run"``, which needs the :class:`Dependencies` capability). Keys are identified by ``id``: an
    override registered for the same id replaces the factory.

    Example:
        ```python
        DB = DependencyKey[Database]("db", connect_database)
        ROOT = DependencyKey("root", lambda: Path.cwd())

        @agent.tool
        async def count_rows(ctx: RunContext[None], table: str) -> int:
            db = await resolve(ctx, DB)  # or: await DB.resolve(ctx)
            return await db.count(table)

        with override(DB, FakeDatabase()):
            await agent.run("How many users?")
        ```
    """

    __slots__ = ("_provider", "factory", "id", "scope")

    @overload
    def __init__(self, id: str, factory: Callable[[], Awaitable[T]], *, scope: DependencyScope = "call") -> None: ...

    @overload
    def __init__(
        self, id: str, factory: Callable[[RunContext[Any]], Awaitable[T]], *, scope: DependencyScope = "call"
    ) -> None: ...

    @overload
    def __init__(self, id: str, factory: Callable[[], T], *, scope: DependencyScope = "call") -> None: ...

    @overload
    def __init__(
        self, id: str, factory: Callable[[RunContext[Any]], T], *, scope: DependencyScope = "call"
    ) -> None: ...

    def __init__(self, id: str, factory: _Factory, *, scope: DependencyScope = "call") -> None:
        if not id:
            raise ValueError("a dependency key needs a non-empty id")
        if scope not in ("call", "run"):
            raise ValueError(f"scope must be 'call' or 'run', got {scope!r}")
        self.id = id
        self.factory = factory
        self.scope: DependencyScope = scope
        self._provider = _Provider.of_factory(factory)

    def __repr__(self) -> str:
        return f"DependencyKey({self.id!r}, scope={self.scope!r})"

    async def resolve(self, ctx: RunContext[Any]) -> T:
        """Same as :func:`resolve`\\ ``(ctx, self)``."""
        return await resolve(ctx, self)


# --- overrides: a chain of frames in a context variable ---------------------------------------------------


@dataclass(frozen=True, eq=False, slots=True)
class _Frame:
    """One override (``key_id`` -> ``provider``), or a run's marker (``key_id`` None), over its ``parent``."""

    parent: _Frame | None
    key_id: str | None = None
    provider: _Provider | None = None

    def find(self, key_id: str) -> _Provider | None:
        frame: _Frame | None = self
        while frame is not None:
            if frame.key_id == key_id:
                return frame.provider
            frame = frame.parent
        return None

    def descends_from(self, ancestor: _Frame) -> bool:
        frame: _Frame | None = self
        while frame is not None:
            if frame is ancestor:
                return True
            frame = frame.parent
        return False


_FRAMES: ContextVar[_Frame | None] = ContextVar("claudecode_model.toolkit.dependency_overrides", default=None)
_RESOLVING: ContextVar[tuple[str, ...]] = ContextVar("claudecode_model.toolkit.resolving", default=())
_MISSING: Any = object()


@overload
def override(key: DependencyKey[T], value: T) -> Any: ...


@overload
def override(
    key: DependencyKey[T],
    *,
    factory: Callable[[], T | Awaitable[T]] | Callable[[RunContext[Any]], T | Awaitable[T]],
) -> Any: ...


@contextmanager
def override(key: DependencyKey[Any], value: Any = _MISSING, *, factory: _Factory | None = None) -> Iterator[None]:
    """Within the ``with`` block, resolving ``key`` (or any key with its id) gives ``value`` or ``factory()``.

    Overrides live in a context variable, so concurrent asyncio tasks (for example two agent runs started with
    ``asyncio.gather``) each see only their own. Inner overrides win over outer ones. With the
    :class:`Dependencies` capability, the overrides active when a run starts stay bound to that run, even for
    tools executed outside its task.

    Example:
        ```python
        with override(DB, FakeDatabase()), override(CLOCK, factory=lambda: FrozenClock(2024)):
            result = await agent.run("...")
        ```
    """
    if (value is _MISSING) == (factory is None):
        raise TypeError("override() takes either a value or factory=, not both or neither")
    provider = _Provider(value=value) if factory is None else _Provider.of_factory(factory)
    token = _FRAMES.set(_Frame(_FRAMES.get(), key.id, provider))
    try:
        yield
    finally:
        _FRAMES.reset(token)


# --- caches -----------------------------------------------------------------------------------------------

_Cache: TypeAlias = dict[str, "asyncio.Future[Any]"]

# Per-call caches hang off the tool call's RunContext object and go when it is collected.
_call_caches: dict[int, tuple[weakref.ref[RunContext[Any]], str | None, _Cache]] = {}


def _call_cache(ctx: RunContext[Any]) -> _Cache:
    key = id(ctx)
    entry = _call_caches.get(key)
    if entry is not None and entry[0]() is ctx and entry[1] == ctx.tool_call_id:
        return entry[2]

    def forget(ref: weakref.ref[RunContext[Any]], key: int = key) -> None:
        current = _call_caches.get(key)
        if current is not None and current[0] is ref:
            del _call_caches[key]

    cache: _Cache = {}
    _call_caches[key] = (weakref.ref(ctx, forget), ctx.tool_call_id, cache)
    return cache


@dataclass(eq=False)
class _RunScope:
    """A run's cache and the override frames that were active when it started."""

    marker: _Frame
    cache: _Cache = field(default_factory=dict)


async def _cached(cache: _Cache, key_id: str, produce: Callable[[], Awaitable[Any]]) -> Any:
    """The value cached under ``key_id``, produced once even when concurrent tool calls ask for it."""
    while (pending := cache.get(key_id)) is not None:
        if pending.done() and not pending.cancelled():
            return pending.result()
        try:
            return await asyncio.shield(pending)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if pending.cancelled() and (task is None or not task.cancelling()):
                continue  # its producer failed or was cancelled: produce it here
            raise
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    cache[key_id] = future
    try:
        value = await produce()
    except BaseException:
        if cache.get(key_id) is future:
            del cache[key_id]
        future.cancel()  # waiters try again themselves
        raise
    future.set_result(value)
    return value


# --- resolution -------------------------------------------------------------------------------------------


def _dependencies(ctx: RunContext[Any]) -> list[Dependencies[Any]]:
    return [cap for cap in ctx.capabilities.values() if isinstance(cap, Dependencies)]


async def resolve(ctx: RunContext[Any], key: DependencyKey[T]) -> T:
    """The value of ``key`` for this tool call.

    In order: the value already cached for the key's scope; an :func:`override` for the key's id; an override
    given to a :class:`Dependencies` capability of the run (the last one wins); the key's own factory.

    Raises:
        DependencyResolutionError: ``key`` is run-scoped and the run has no :class:`Dependencies`
            capability, or its factory (directly or indirectly) resolves ``key`` again.
    """
    capabilities = _dependencies(ctx)
    scope = next((cap._scope for cap in reversed(capabilities) if cap._scope is not None), None)
    match key.scope:
        case "call":
            cache = _call_cache(ctx)
        case "run":
            if scope is None:
                raise DependencyResolutionError(
                    f"{key!r} is run-scoped: add `Dependencies()` to the agent's capabilities "
                    "(Agent(..., capabilities=[Dependencies()])) so the run can hold its value"
                )
            cache = scope.cache
    resolving = _RESOLVING.get()
    if key.id in resolving:
        chain = " -> ".join((*resolving, key.id))
        raise DependencyResolutionError(f"dependency cycle: {chain}")

    async def produce() -> Any:
        frames = _FRAMES.get()
        if scope is not None and (frames is None or not frames.descends_from(scope.marker)):
            frames = scope.marker  # running outside the run's task: use the overrides bound at run start
        provider = frames.find(key.id) if frames is not None else None
        if provider is None:
            provider = next(
                (cap._providers[key.id] for cap in reversed(capabilities) if key.id in cap._providers), None
            )
        token = _RESOLVING.set((*resolving, key.id))
        try:
            return await (provider or key._provider).produce(ctx)
        finally:
            _RESOLVING.reset(token)

    return cast("T", await _cached(cache, key.id, produce))


@dataclass
class Dependencies(AbstractCapability[AgentDepsT]):
    """Run-level dependency support: a cache for ``scope="run"`` keys, and overrides registered for the agent.

    ``values`` and ``factories`` override keys by id for every run of the agent (or of one run, when passed to
    ``agent.run(..., capabilities=[...])``); :func:`override` blocks still win over them. The run cache is
    dropped when the run ends, and the :func:`override` blocks active when the run starts stay bound to it.

    Example:
        ```python
        agent = Agent(model, capabilities=[Dependencies(values={DB: test_db})])
        result = await agent.run("...", capabilities=[Dependencies(factories={CLOCK: FrozenClock})])
        ```
    """

    values: Mapping[DependencyKey[Any], Any] = field(default_factory=dict)
    factories: Mapping[DependencyKey[Any], _Factory] = field(default_factory=dict)
    _providers: dict[str, _Provider] = field(init=False, repr=False)
    _scope: _RunScope | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._providers = {key.id: _Provider(value=value) for key, value in self.values.items()}
        self._providers.update({key.id: _Provider.of_factory(make) for key, make in self.factories.items()})

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds keys and callables

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractCapability[AgentDepsT]:
        run_instance = dataclasses.replace(self)
        run_instance._scope = _RunScope(marker=_Frame(_FRAMES.get()))
        return run_instance

    async def wrap_run(self, ctx: RunContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        scope = self._scope
        if scope is None:  # not the run's own instance
            return await handler()
        token = _FRAMES.set(scope.marker)
        try:
            return await handler()
        finally:
            _FRAMES.reset(token)
            scope.cache.clear()
