"""Seed 000, User Story 4 and SC-009: serialize_deps() / deserialize_deps() and their round trip."""

from __future__ import annotations

import dataclasses
import enum
import json
import socket
import threading
from typing import Any, Literal

import dacite
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from claudecode_model.deps_support import deserialize_deps, is_serializable_type, serialize_deps
from claudecode_model.exceptions import UnsupportedDepsTypeError


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Limits(BaseModel):
    max_items: int
    ratio: float = 0.5


@dataclasses.dataclass
class Endpoint:
    host: str
    port: int


@dataclasses.dataclass
class Settings:
    name: str
    endpoints: list[Endpoint]
    by_region: dict[str, Endpoint]
    tags: tuple[str, ...]
    mode: Mode
    level: Literal["low", "high"]
    limits: Limits
    timeout: float | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


class Profile(BaseModel):
    user: str
    scopes: list[str]
    endpoint: dict[str, int]
    nickname: str | None = None


def sample_settings() -> Settings:
    return Settings(
        name="prod",
        endpoints=[Endpoint("a.example", 443), Endpoint("b.example", 8443)],
        by_region={"eu": Endpoint("eu.example", 443)},
        tags=("x", "y"),
        mode=Mode.SAFE,
        level="high",
        limits=Limits(max_items=10),
        timeout=2.5,
        extra={"nested": [1, {"k": None}]},
    )


def test_dataclass_serialises_to_a_json_string() -> None:
    text = serialize_deps(Endpoint("api.example", 443))

    assert isinstance(text, str)
    assert json.loads(text) == {"host": "api.example", "port": 443}
    assert text == json.dumps(dataclasses.asdict(Endpoint("api.example", 443)))


def test_pydantic_model_serialises_with_model_dump_json() -> None:
    profile = Profile(user="ada", scopes=["read"], endpoint={"port": 1})

    assert serialize_deps(profile) == profile.model_dump_json()


def test_json_and_dataclass_type_are_rebuilt_with_dacite_from_dict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[type] = []
    real_from_dict = dacite.from_dict

    def spy(data_class: type, data: Any, config: dacite.Config | None = None) -> Any:
        calls.append(data_class)
        assert config is not None
        assert config.strict
        return real_from_dict(data_class=data_class, data=data, config=config)

    monkeypatch.setattr(dacite, "from_dict", spy)

    rebuilt = deserialize_deps('{"host": "api.example", "port": 443}', Endpoint)

    assert rebuilt == Endpoint("api.example", 443)
    assert calls == [Endpoint]


def test_dacite_is_strict_about_unknown_keys_and_types() -> None:
    with pytest.raises(dacite.UnexpectedDataError):
        deserialize_deps('{"host": "h", "port": 1, "extra": true}', Endpoint)
    with pytest.raises(dacite.WrongTypeError):
        deserialize_deps('{"host": "h", "port": "1"}', Endpoint)


@pytest.mark.parametrize(
    "value",
    [threading.Lock(), object(), {1, 2}, b"bytes", Endpoint("h", threading.Lock())],  # type: ignore[arg-type]
    ids=["lock", "object", "set", "bytes", "dataclass-with-lock"],
)
def test_non_serialisable_object_raises_unsupported_deps_type_error(value: object) -> None:
    with pytest.raises(UnsupportedDepsTypeError):
        serialize_deps(value)


def test_dataclass_with_non_serialisable_field_type_is_refused_even_when_unset() -> None:
    @dataclasses.dataclass
    class Holder:
        connection: socket.socket | None = None

    assert not is_serializable_type(Holder)
    with pytest.raises(UnsupportedDepsTypeError, match="field types are not"):
        serialize_deps(Holder())


def test_sc009_dataclass_round_trip() -> None:
    settings = sample_settings()

    rebuilt = deserialize_deps(serialize_deps(settings), Settings)

    assert rebuilt == settings
    assert isinstance(rebuilt.tags, tuple)
    assert rebuilt.mode is Mode.SAFE
    assert isinstance(rebuilt.limits, Limits)
    assert isinstance(rebuilt.by_region["eu"], Endpoint)


def test_sc009_recursive_dataclass_round_trip() -> None:
    tree = Node(1, [Node(2), Node(3, [Node(4)])])

    assert deserialize_deps(serialize_deps(tree), Node) == tree


def test_sc009_pydantic_model_round_trip() -> None:
    profile = Profile(user="ada", scopes=["read", "write"], endpoint={"port": 8080}, nickname="A")

    rebuilt = deserialize_deps(serialize_deps(profile), Profile)

    assert rebuilt == profile
    assert isinstance(rebuilt, Profile)


@pytest.mark.parametrize(
    ("value", "deps_type"),
    [
        ({"a": [1, 2]}, dict[str, list[int]]),
        ([1, "x", None], list[Any]),
        ("text", str),
        (3, int),
        (None, type(None)),
    ],
)
def test_sc009_plain_json_round_trip(value: object, deps_type: Any) -> None:
    assert deserialize_deps(serialize_deps(value), deps_type) == value


def test_deserialize_plain_types_is_strict() -> None:
    with pytest.raises(pydantic.ValidationError):
        deserialize_deps('"3"', int)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)


@given(
    st.builds(
        Endpoint,
        host=st.text(),
        port=st.integers(min_value=0, max_value=65535),
    ),
    json_values,
)
def test_sc009_round_trip_property(endpoint: Endpoint, value: object) -> None:
    assert deserialize_deps(serialize_deps(endpoint), Endpoint) == endpoint
    assert json.loads(serialize_deps(value)) == value


def test_enum_values_must_be_serialisable_too() -> None:
    class Weird(enum.Enum):
        LOCK = threading.Lock()

    assert serialize_deps(Mode.FAST) == '"fast"'
    with pytest.raises(UnsupportedDepsTypeError, match=r"deps\.value is a _thread\.lock"):
        serialize_deps(Weird.LOCK)
