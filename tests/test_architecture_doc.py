"""docs/architecture.md names every module of the package, so a maintainer finds each one there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "claudecode_model"
PAGE = ROOT / "docs" / "architecture.md"


def module_names() -> list[str]:
    """Each module as the page names it: ``model.py`` at the root, ``ipc/bridge.py`` in a folder."""
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py") if path.name != "__init__.py")


def named_on_the_page() -> set[str]:
    """Every ``name.py`` the page names in backticks, with the folder of the table row it stands in."""
    named: set[str] = set()
    for line in PAGE.read_text().splitlines():
        folder = re.match(r"\| `(\w+)/` \|", line)
        for name in re.findall(r"`([\w/]+\.py)`", line):
            named.add(f"{folder.group(1)}/{name}" if folder and "/" not in name else name)
    return named


def test_every_module_of_the_package_is_named_on_the_architecture_page() -> None:
    missing = [name for name in module_names() if name not in named_on_the_page()]

    assert missing == [], f"docs/architecture.md does not name {missing}"


def test_the_page_names_no_module_that_does_not_exist() -> None:
    modules = set(module_names())

    stale = sorted(name for name in named_on_the_page() if name not in modules and not name.startswith("tests/"))

    assert stale == [], f"docs/architecture.md names modules that do not exist: {stale}"
