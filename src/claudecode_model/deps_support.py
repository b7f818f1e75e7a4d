"""Serialisable tool dependencies: validation, JSON round trip and :class:`DepsContext` (experimental).

.. warning::
   Experimental API: :class:`DepsContext`, :func:`convert_tool_with_deps` and the helpers here may change in a
   future release.

Supported dependency values are ``None``, ``bool``, ``int``, ``float``, ``str``, ``dict`` (string
keys), ``list``, ``tuple``, :class:`enum.Enum` members, dataclass instances and pydantic ``BaseModel``
instances, nested in any way.
Anything else (``httpx.AsyncClient``, sockets, open files, locks, coroutines, ...) raises
:class:`~claudecode_model.exceptions.UnsupportedDepsTypeError`.

Forward references in dataclass annotations follow two rules:

* **Unresolved type** → :class:`~claudecode_model.exceptions.TypeHintResolutionError`. The dataclass's
  annotations are resolved with :func:`typing.get_type_hints`; if that fails because a name in them does
  not exist (``config: "Missing"``, a ``TYPE_CHECKING``-only import under
  ``from __future__ import annotations``, a class local to a function) or an annotation cannot be
  evaluated, the dataclass cannot be rebuilt from JSON, so it is refused.
* **A forward reference that stays a string** → warning log, treated as serialisable. Some annotations
  resolve fine yet carry a forward reference that :func:`typing.get_type_hints` never evaluates: the
  string bound or constraint of a ``TypeVar`` (``TypeVar("T", bound="Config")``) and the string supertype
  of a ``NewType``. Such a string cannot be checked, so it is assumed serialisable and a warning names it.
  The field's actual value is still checked.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import logging
import types
import typing
from typing import Any, Generic, Protocol, Self, TypeVar, cast, runtime_checkable

import dacite
import pydantic
import pydantic_core

from claudecode_model.exceptions import TypeHintResolutionError, UnsupportedDepsTypeError

if typing.TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "DepsBearer",
    "DepsContext",
    "ToolCallContext",
    "create_deps_context",
    "deserialize_deps",
    "is_instance_serializable",
    "is_serializable_type",
    "serialize_deps",
    "validate_deps",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_PRIMITIVES: tuple[type, ...] = (str, int, float, bool, type(None))
_SUPPORTED = "None, bool, int, float, str, dict with str keys, list, tuple, Enum, dataclass and pydantic BaseModel"


# --- type-level check ---------------------------------------------------------------------------------------


def _dataclass_hints(cls: type) -> dict[str, Any]:
    """Resolve the field annotations of a dataclass, or raise :class:`TypeHintResolutionError`."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, AttributeError, TypeError) as e:  # an undefined name, or an annotation that cannot run
        raise TypeHintResolutionError(
            f"Cannot resolve the type hints of dataclass {cls.__qualname__!r}: {e}. Define every type "
            "its fields refer to at module level (not only under TYPE_CHECKING) so the dependencies can be "
            "rebuilt from JSON.",
            type_name=cls.__qualname__,
            original_error=e,
        ) from e


def _lenient(owner: str, reference: object) -> bool:
    name = reference.__forward_arg__ if isinstance(reference, typing.ForwardRef) else reference
    logger.warning(
        "Forward reference %r in %s stays a string and cannot be resolved; assuming it is serialisable",
        name,
        owner,
    )
    return True


def _type_is_serializable(tp: Any, owner: str, seen: set[type]) -> bool:
    if isinstance(tp, str | typing.ForwardRef):
        return _lenient(owner, tp)
    if tp is Any or tp is object or tp in _PRIMITIVES or tp is None:
        return True
    if isinstance(tp, TypeVar):
        if tp.__bound__ is not None:
            return _type_is_serializable(tp.__bound__, owner, seen)
        return all(_type_is_serializable(c, owner, seen) for c in tp.__constraints__)
    if isinstance(tp, typing.NewType):
        return _type_is_serializable(tp.__supertype__, owner, seen)
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _type_is_serializable(typing.get_args(tp)[0], owner, seen)
    if origin is typing.Literal:
        return all(isinstance(v, (*_PRIMITIVES, enum.Enum)) for v in typing.get_args(tp))
    if origin is typing.Union or origin is types.UnionType:
        return all(_type_is_serializable(a, owner, seen) for a in typing.get_args(tp))
    if origin in (list, tuple):
        return all(a is Ellipsis or _type_is_serializable(a, owner, seen) for a in typing.get_args(tp))
    if origin is dict:
        args = typing.get_args(tp)
        return not args or (args[0] in (str, Any) and _type_is_serializable(args[1], owner, seen))
    if origin is not None:
        # A parametrised generic dataclass (Box[int]) is checked through its origin.
        return isinstance(origin, type) and dataclasses.is_dataclass(origin) and _class_is_serializable(origin, seen)
    if isinstance(tp, type):
        return _class_is_serializable(tp, seen)
    return False


def _class_is_serializable(cls: type, seen: set[type]) -> bool:
    if cls in (list, tuple, dict) or issubclass(cls, enum.Enum | pydantic.BaseModel):
        return True
    if not dataclasses.is_dataclass(cls):
        return False
    if cls in seen:  # recursive dataclasses (a tree of nodes) are fine
        return True
    seen.add(cls)
    hints = _dataclass_hints(cls)
    return all(
        _type_is_serializable(hints.get(f.name, f.type), f"field {f.name!r} of {cls.__qualname__}", seen)
        for f in dataclasses.fields(cls)
    )


def is_serializable_type(deps_type: Any) -> bool:
    """Whether values of ``deps_type`` can be serialised to JSON and rebuilt (experimental).

    Accepts the types listed in the module documentation, parametrised containers of them, ``Optional`` and
    unions, ``Literal`` and ``Any``. Raises :class:`TypeHintResolutionError` for a dataclass whose annotations
    name undefined types.
    """
    return _type_is_serializable(deps_type, repr(deps_type), set())


# --- value-level check --------------------------------------------------------------------------------------


def _unsupported(value: object, path: str) -> UnsupportedDepsTypeError:
    kind = type(value)
    return UnsupportedDepsTypeError(
        f"Dependencies must be serialisable, but {path} is a {kind.__module__}.{kind.__qualname__}. "
        f"Supported: {_SUPPORTED}. Keep clients, connections and handles out of the deps, or build them "
        "inside the tool from serialisable settings.",
        type_name=kind.__qualname__,
    )


def _children(value: object, path: str) -> Iterator[tuple[object, str]]:
    match value:
        case dict():
            for key, item in value.items():
                if not isinstance(key, str):
                    raise UnsupportedDepsTypeError(
                        f"Dependencies must be serialisable, but {path} has a {type(key).__qualname__} key "
                        f"({key!r}); JSON objects only have string keys.",
                        type_name=type(key).__qualname__,
                    )
                yield item, f"{path}[{key!r}]"
        case list() | tuple():
            for index, item in enumerate(value):
                yield item, f"{path}[{index}]"
        case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if not _class_is_serializable(type(value), set()):
                raise UnsupportedDepsTypeError(
                    f"Dependencies must be serialisable, but {path} is a {type(value).__qualname__} whose "
                    f"field types are not. Supported: {_SUPPORTED}.",
                    type_name=type(value).__qualname__,
                )
            for f in dataclasses.fields(value):
                yield getattr(value, f.name), f"{path}.{f.name}"
        case _:
            return


def _check_value(value: object, path: str, active: set[int]) -> None:
    if isinstance(value, _PRIMITIVES):
        return
    if isinstance(value, enum.Enum):  # serialised as its value
        _check_value(value.value, f"{path}.value", active)
        return
    if isinstance(value, pydantic.BaseModel):
        try:
            value.model_dump_json()
        except pydantic_core.PydanticSerializationError as e:
            raise _unsupported(value, path) from e
        return
    is_container = isinstance(value, dict | list | tuple)
    if not is_container and not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        raise _unsupported(value, path)
    if id(value) in active:
        raise UnsupportedDepsTypeError(
            f"Dependencies must be serialisable, but {path} refers back to itself.", type_name=type(value).__qualname__
        )
    active.add(id(value))
    try:
        for child, child_path in _children(value, path):
            _check_value(child, child_path, active)
    finally:
        active.discard(id(value))


def validate_deps(deps: object) -> None:
    """Check that ``deps`` can be serialised (experimental).

    Raises:
        UnsupportedDepsTypeError: a value (or a dataclass field type) is not serialisable; the message says
            where.
        TypeHintResolutionError: a dataclass's annotations name undefined types.
    """
    _check_value(deps, "deps", set())


def is_instance_serializable(obj: object) -> bool:
    """Whether ``obj`` passes :func:`validate_deps` (experimental); never raises for an unsupported value.

    Raises:
        TypeHintResolutionError: a dataclass's annotations name undefined types.
    """
    try:
        validate_deps(obj)
    except UnsupportedDepsTypeError:
        return False
    return True


# --- JSON round trip ----------------------------------------------------------------------------------------


def _json_default(value: object) -> object:
    match value:
        case pydantic.BaseModel():
            return value.model_dump(mode="json")
        case enum.Enum():
            return value.value
        case _:
            raise TypeError(f"{type(value).__qualname__} is not JSON serialisable")


def serialize_deps(deps: object) -> str:
    """Serialise dependencies to a JSON string (experimental).

    Dataclasses go through :func:`dataclasses.asdict`, pydantic models through ``model_dump_json()``,
    everything else through :func:`json.dumps`.

    Raises:
        UnsupportedDepsTypeError: ``deps`` is not serialisable.
        TypeHintResolutionError: a dataclass's annotations name undefined types.
    """
    validate_deps(deps)
    if isinstance(deps, pydantic.BaseModel):
        return deps.model_dump_json()
    if dataclasses.is_dataclass(deps) and not isinstance(deps, type):
        return json.dumps(dataclasses.asdict(deps), default=_json_default, ensure_ascii=False)
    return json.dumps(deps, default=_json_default, ensure_ascii=False)


def _model_hooks(tp: Any, hooks: dict[type, Any], seen: set[type]) -> None:
    """Collect dacite type hooks that rebuild the pydantic models nested in a dataclass."""
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        model = tp
        hooks[model] = lambda data: data if isinstance(data, model) else model.model_validate(data)
        return
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp in seen:
            return
        seen.add(tp)
        hints = _dataclass_hints(tp)
        for f in dataclasses.fields(tp):
            _model_hooks(hints.get(f.name, f.type), hooks, seen)
        return
    for arg in typing.get_args(tp):
        _model_hooks(arg, hooks, seen)


def deserialize_deps(json_str: str, deps_type: type[T]) -> T:
    """Rebuild dependencies of ``deps_type`` from :func:`serialize_deps` output (experimental).

    Dataclasses are rebuilt with ``dacite.from_dict`` (strict: unknown keys are errors; tuples and enums are
    cast back), pydantic models with ``model_validate_json``, any other type with a strict ``TypeAdapter``.

    Raises:
        TypeHintResolutionError: a dataclass's annotations name undefined types.
        json.JSONDecodeError, dacite.DaciteError, pydantic.ValidationError: ``json_str`` does not fit
            ``deps_type``.
    """
    data = json.loads(json_str)  # text that is not JSON at all raises json.JSONDecodeError, whatever the type
    if isinstance(deps_type, type) and issubclass(deps_type, pydantic.BaseModel):
        return cast("T", deps_type.model_validate_json(json_str))
    if isinstance(deps_type, type) and dataclasses.is_dataclass(deps_type):
        hooks: dict[type, Any] = {}
        _model_hooks(deps_type, hooks, set())
        config = dacite.Config(strict=True, cast=[tuple, enum.Enum], type_hooks=hooks)
        try:
            return cast("T", dacite.from_dict(data_class=deps_type, data=data, config=config))
        except dacite.ForwardReferenceError as e:
            raise TypeHintResolutionError(
                f"Cannot resolve the type hints of dataclass {deps_type.__qualname__!r}: {e}",
                type_name=deps_type.__qualname__,
                original_error=e,
            ) from e
    return pydantic.TypeAdapter(deps_type).validate_json(json_str, strict=True)


# --- DepsContext --------------------------------------------------------------------------------------------


@runtime_checkable
class DepsBearer(Protocol[T_co]):
    """Anything that carries dependencies as ``deps``: :class:`ToolCallContext`, :class:`DepsContext`, pydantic-ai's
    ``RunContext``."""

    @property
    def deps(self) -> T_co: ...


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCallContext(Generic[T]):
    """What a tool converted with a context receives as its ``ctx`` argument: the ``RunContext`` attributes tools
    commonly read (experimental).

    ``deps`` (any value, shared, not copied, as in pydantic-ai), ``tool_name``, ``tool_call_id`` (the Anthropic
    ``tool_use`` id when the transport reports it, else ``None``) and ``retry`` (always 0: there is no retry loop
    on this path). Unlike :class:`DepsContext`, the deps are not checked for serialisability.
    """

    deps: T
    tool_name: str | None = None
    tool_call_id: str | None = None
    retry: int = 0

    def for_call(self, tool_name: str, tool_call_id: str | None = None) -> Self:
        """The context one tool call sees: the same deps (not re-validated), the call's tool name and id."""
        call = copy.copy(self)
        object.__setattr__(call, "tool_name", tool_name)
        object.__setattr__(call, "tool_call_id", tool_call_id)
        return call


@dataclasses.dataclass(frozen=True, slots=True)
class DepsContext(ToolCallContext[T]):
    """A lightweight stand-in for pydantic-ai's ``RunContext`` that carries serialisable deps (experimental).

    A tool converted with :func:`~claudecode_model.tool_converter.convert_tool_with_deps` receives one as its
    ``ctx`` argument: a :class:`ToolCallContext` whose deps were checked with :func:`validate_deps`.

    Raises:
        UnsupportedDepsTypeError: ``deps`` is not serialisable.
        TypeHintResolutionError: a dataclass's annotations name undefined types.
    """

    def __post_init__(self) -> None:
        validate_deps(self.deps)


def create_deps_context(deps: T) -> DepsContext[T]:
    """A :class:`DepsContext` for ``deps`` (experimental).

    Raises:
        UnsupportedDepsTypeError: ``deps`` is not serialisable.
        TypeHintResolutionError: a dataclass's annotations name undefined types.
    """
    return DepsContext(deps)
