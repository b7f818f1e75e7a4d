"""The locked environment (requirements/dev.lock) covers what pyproject.toml asks for, every pin with its hashes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "dev.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def locked_pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in LOCK.read_text().splitlines():
        match = PIN.match(line)
        if match:
            pins[canonicalize_name(match.group(1))] = Version(match.group(2))
    return pins


def wanted_requirements() -> list[Requirement]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    build = pyproject["build-system"]["requires"]
    return [Requirement(text) for text in [*project["dependencies"], *project["optional-dependencies"]["dev"], *build]]


def test_every_requirement_of_pyproject_is_locked_at_a_version_its_range_allows() -> None:
    pins = locked_pins()

    stale = [
        str(requirement)
        for requirement in wanted_requirements()
        if canonicalize_name(requirement.name) not in pins
        or pins[canonicalize_name(requirement.name)] not in requirement.specifier
    ]

    assert stale == [], f"requirements/dev.lock does not satisfy {stale}: run `make lock` and commit the lock"


def test_every_pin_carries_hashes() -> None:
    entries = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text())
    pinned = [entry for entry in entries if PIN.match(entry)]

    assert len(pinned) == len(locked_pins()) > 50
    assert [entry.split()[0] for entry in pinned if "--hash=sha256:" not in entry] == []
