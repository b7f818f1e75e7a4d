"""Dependency keys: resolution, caching per call and per run, overrides (also under concurrency), cleanup."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from collections.abc import Callable
from typing import TypeVar

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import TextPart
from pydantic_ai.models.function import FunctionModel

from claudecode_model.exceptions import ClaudeCodeError
from claudecode_model.toolkit import (
    Dependencies,
    DependencyKey,
    DependencyResolutionError,
    ToolResults,
    override,
    resolve,
)
from tests._support.brains import Script, calls

pytestmark = pytest.mark.filterwarnings("error")

T = TypeVar("T")


class Counter:
    """A factory that counts its calls and returns ``prefix-<n>``."""

    def __init__(self, prefix: str = "value") -> None:
        self.prefix = prefix
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return f"{self.prefix}-{self.calls}"


def use_once() -> FunctionModel:
    """A model that calls the tool ``use`` once, then answers ``ok``."""
    return Script(calls("use"), [TextPart("ok")]).model


def agent_resolving(key: DependencyKey[T]) -> tuple[Agent[None, str], list[T]]:
    """An agent on :func:`use_once` whose tool ``use`` resolves ``key``, and the list of what it got."""
    got: list[T] = []
    agent: Agent[None, str] = Agent(use_once())

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        got.append(await resolve(ctx, key))
        return "x"

    return agent, got


# --- resolving -------------------------------------------------------------------------------------------


async def test_sync_async_and_context_factories() -> None:
    async def make_async() -> str:
        await asyncio.sleep(0)
        return "from async"

    sync_key = DependencyKey("sync", lambda: "from sync")
    async_key = DependencyKey("async", make_async)
    ctx_key = DependencyKey("ctx", lambda ctx: f"deps={ctx.deps}")
    got: list[str] = []
    agent = Agent(use_once(), deps_type=str)

    @agent.tool
    async def use(ctx: RunContext[str]) -> str:
        got.extend([await resolve(ctx, sync_key), await async_key.resolve(ctx), await resolve(ctx, ctx_key)])
        return "used"

    await agent.run("go", deps="D")
    assert got == ["from sync", "from async", "deps=D"]


def test_key_validation() -> None:
    with pytest.raises(ValueError, match="non-empty id"):
        DependencyKey("", lambda: 1)
    with pytest.raises(ValueError, match="scope"):
        DependencyKey("x", lambda: 1, scope="session")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="2 arguments"):
        DependencyKey("x", lambda a, b: 1)  # type: ignore[arg-type, misc]  # a factory of two arguments, on purpose
    assert repr(DependencyKey("db", lambda: 1, scope="run")) == "DependencyKey('db', scope='run')"


def test_override_validation() -> None:
    key = DependencyKey("x", lambda: 1)
    with pytest.raises(TypeError, match="either a value or factory"), override(key):  # type: ignore[call-overload]
        pass
    with pytest.raises(TypeError, match="either a value or factory"), override(key, 2, factory=lambda: 3):  # type: ignore[call-overload]
        pass


# --- caching ---------------------------------------------------------------------------------------------


async def test_cached_for_the_tool_call() -> None:
    factory = Counter()
    key = DependencyKey("counter", factory)
    seen: list[tuple[str, str]] = []
    # Two calls in one reply (run in parallel), then one more in the next step.
    agent: Agent[None, str] = Agent(Script(calls("use", "use"), calls("use"), [TextPart("ok")]).model)

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        first = await resolve(ctx, key)
        second = await resolve(ctx, key)
        seen.append((first, second))
        return first

    await agent.run("go")
    assert factory.calls == 3
    assert all(first == second for first, second in seen)
    assert sorted(first for first, _ in seen) == ["value-1", "value-2", "value-3"]


async def test_same_id_shares_the_cache_and_overrides() -> None:
    one = DependencyKey("shared", lambda: "one")
    two = DependencyKey("shared", lambda: "two")
    got: list[str] = []
    agent: Agent[None, str] = Agent(use_once())

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        got.extend([await resolve(ctx, one), await resolve(ctx, two)])
        return "x"

    await agent.run("go")
    with override(two, "overridden"):
        await agent.run("go again", model=use_once())
    assert got == ["one", "one", "overridden", "overridden"]


async def test_cached_for_the_run_with_dependencies() -> None:
    started = asyncio.Event()

    class Slow(Counter):
        async def make(self) -> str:
            self.calls += 1
            started.set()
            await asyncio.sleep(0.01)  # concurrent callers must wait for this value, not make their own
            return f"client-{self.calls}"

    factory = Slow()
    key = DependencyKey("client", factory.make, scope="run")
    got: list[str] = []
    script = Script(calls("use", "use", "use"), calls("use"), [TextPart("ok")])
    agent: Agent[None, str] = Agent(script.model, capabilities=[Dependencies()])

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        got.append(await resolve(ctx, key))
        return "x"

    await agent.run("go")
    assert got == ["client-1"] * 4
    assert factory.calls == 1
    await agent.run("again", model=Script(calls("use", "use", "use"), calls("use"), [TextPart("ok")]).model)
    assert got[4:] == ["client-2"] * 4


async def test_run_scope_needs_the_capability_and_says_so() -> None:
    key = DependencyKey("client", lambda: "c", scope="run")
    agent: Agent[None, str] = Agent(Script(calls("use")).model, capabilities=[ToolResults()])

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        return await resolve(ctx, key)

    # A setup mistake: not turned into an error result for the model, even with ToolResults.
    with pytest.raises(DependencyResolutionError, match=r"add `Dependencies\(\)`") as raised:
        await agent.run("go")
    assert isinstance(raised.value, ClaudeCodeError)


async def test_a_failing_factory_is_not_cached() -> None:
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("down")
        return "up"

    key = DependencyKey("flaky", flaky, scope="run")
    got: list[str] = []
    agent: Agent[None, str] = Agent(
        Script(calls("use"), calls("use"), [TextPart("ok")]).model, capabilities=[Dependencies()]
    )

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        try:
            got.append(await resolve(ctx, key))
        except ConnectionError as error:
            got.append(str(error))
        return "x"

    await agent.run("go")
    assert got == ["down", "up"]


async def test_cycles_are_reported() -> None:
    first: DependencyKey[str]
    second: DependencyKey[str]

    async def make_first(ctx: RunContext[None]) -> str:
        return await resolve(ctx, second)

    async def make_second(ctx: RunContext[None]) -> str:
        return await resolve(ctx, first)

    first = DependencyKey("first", make_first)
    second = DependencyKey("second", make_second)
    agent: Agent[None, str] = Agent(Script(calls("use")).model)

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        return await resolve(ctx, first)

    with pytest.raises(DependencyResolutionError, match="dependency cycle: first -> second -> first"):
        await agent.run("go")


async def test_dependencies_resolving_dependencies() -> None:
    base = DependencyKey("base", lambda: 20)

    async def make_derived(ctx: RunContext[None]) -> int:
        return await resolve(ctx, base) + 1

    derived = DependencyKey("derived", make_derived)
    agent, got = agent_resolving(derived)

    with override(base, 41):
        await agent.run("go")
    assert got == [42]


class Resource:
    """A value whose lifetime a test follows through a weak reference."""


def tracked_factory() -> tuple[Callable[[], Resource], list[weakref.ref[Resource]]]:
    """A factory of fresh resources, and the weak references to everything it made."""
    refs: list[weakref.ref[Resource]] = []

    def make() -> Resource:
        resource = Resource()
        refs.append(weakref.ref(resource))
        return resource

    return make, refs


async def test_cached_values_are_released_after_the_run() -> None:
    make, refs = tracked_factory()
    call_key = DependencyKey("per-call", make)
    run_key = DependencyKey("per-run", make, scope="run")
    agent: Agent[None, str] = Agent(
        Script(calls("use", "use"), calls("use"), [TextPart("ok")]).model, capabilities=[Dependencies()]
    )

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        await resolve(ctx, call_key)
        await resolve(ctx, run_key)
        return "x"

    result = await agent.run("go")
    gc.collect()
    assert len(refs) == 4  # three calls, one run
    assert [ref() for ref in refs] == [None] * 4
    del result


async def test_run_cache_is_dropped_when_the_run_ends_even_if_its_context_is_kept() -> None:
    make, refs = tracked_factory()
    key = DependencyKey("per-run", make, scope="run")
    kept: list[RunContext[None]] = []
    agent: Agent[None, str] = Agent(use_once(), capabilities=[Dependencies()])

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        await resolve(ctx, key)
        kept.append(ctx)  # holds the run's capabilities, hence its Dependencies instance
        return "x"

    await agent.run("go")
    gc.collect()
    assert kept
    assert refs[0]() is None


# --- overrides -------------------------------------------------------------------------------------------


async def test_override_value_and_factory_and_nesting() -> None:
    key = DependencyKey("clock", lambda: "real clock")
    agent, got = agent_resolving(key)

    async def run() -> None:
        await agent.run("go", model=use_once())

    await run()
    with override(key, "fake clock"):
        await run()
        with override(key, factory=lambda ctx: f"inner clock at step {ctx.run_step}"):
            await run()
        await run()
    await run()
    assert got == ["real clock", "fake clock", "inner clock at step 1", "fake clock", "real clock"]


async def test_registered_overrides_and_their_order() -> None:
    key = DependencyKey("db", lambda: "production db")
    other = DependencyKey("cache", lambda: "real cache")
    got: list[tuple[str, str]] = []

    def new_agent(*capabilities: Dependencies[None]) -> Agent[None, str]:
        agent = Agent(use_once(), capabilities=list(capabilities))

        @agent.tool
        async def use(ctx: RunContext[None]) -> str:
            got.append((await resolve(ctx, key), await resolve(ctx, other)))
            return "x"

        return agent

    await new_agent(Dependencies(values={key: "agent db"})).run("go")
    await new_agent(Dependencies(values={key: "agent db"})).run(
        "go", capabilities=[Dependencies(factories={key: lambda: "run db", other: lambda: "run cache"})]
    )
    with override(key, "test db"):
        await new_agent(Dependencies(values={key: "agent db"})).run("go")
    assert got == [
        ("agent db", "real cache"),
        ("run db", "run cache"),  # run-level registrations win over the agent's
        ("test db", "real cache"),  # an override() block wins over registrations
    ]


async def test_concurrent_runs_see_only_their_own_overrides() -> None:
    key = DependencyKey("tenant", lambda: "no tenant")
    both_inside = asyncio.Barrier(2)
    got: dict[str, list[str]] = {"a": [], "b": []}

    def new_agent() -> Agent[str, str]:
        agent = Agent(Script(calls("use"), calls("use"), [TextPart("ok")]).model, deps_type=str)

        @agent.tool
        async def use(ctx: RunContext[str]) -> str:
            await both_inside.wait()  # both runs are inside a tool call at the same time
            got[ctx.deps].append(await resolve(ctx, key))
            return "x"

        return agent

    async def run(name: str) -> None:
        with override(key, f"tenant {name}"):
            await new_agent().run("go", deps=name)

    await asyncio.gather(run("a"), run("b"))
    assert got == {"a": ["tenant a", "tenant a"], "b": ["tenant b", "tenant b"]}


async def test_overrides_stay_bound_to_the_run_for_tools_run_elsewhere() -> None:
    """Claude Code runs tools from its own tasks; ``Dependencies`` binds the run's overrides at its start."""
    key = DependencyKey("tenant", lambda: "no tenant")
    got: list[str] = []

    def new_agent(*capabilities: Dependencies[None]) -> Agent[None, str]:
        agent = Agent(use_once(), capabilities=list(capabilities))

        @agent.tool
        async def use(ctx: RunContext[None]) -> str:
            # Resolve from a task whose context is not the run's (empty: no overrides at all).
            task = asyncio.get_running_loop().create_task(resolve(ctx, key), context=contextvars.Context())
            got.append(await task)
            return "x"

        return agent

    with override(key, "tenant a"):
        await new_agent(Dependencies()).run("go")
        await new_agent().run("go")
    assert got == ["tenant a", "no tenant"]


async def test_override_inside_a_run_with_dependencies() -> None:
    key = DependencyKey("mode", lambda: "default")
    got: list[str] = []
    agent: Agent[None, str] = Agent(use_once(), capabilities=[Dependencies()])

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        with override(key, "set inside the tool"):
            got.append(await resolve(ctx, key))
        return "x"

    with override(key, "set for the run"):
        await agent.run("go")
    assert got == ["set inside the tool"]


async def test_override_is_removed_on_error() -> None:
    key = DependencyKey("x", lambda: "real")
    with pytest.raises(RuntimeError, match="boom"), override(key, "fake"):
        raise RuntimeError("boom")
    agent: Agent[None, str] = Agent(use_once())
    got: list[str] = []

    @agent.tool
    async def use(ctx: RunContext[None]) -> str:
        got.append(await resolve(ctx, key))
        return "x"

    await agent.run("go")
    assert got == ["real"]
