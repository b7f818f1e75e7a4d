"""The package's import graph: no circles, no layer reaching up, no private name taken from another module, and
every private module stating its names in ``__all__`` (the rules of docs/architecture.md)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "claudecode_model"

CORE_LAYERS = ("_process", "_history", "_tools", "_sessions", "_stream", "_turns")
"""The core's folders, lowest first: a module may import from its own folder and the folders before it."""

FOUNDATION = (
    "exceptions",
    "settings",
    "builtin_tools",
    "deps_support",
    "_compat",
    "_version",
    "ipc",
    "stores",
    "toolkit",  # the cut-result reader keeps texts in the tool output cache's store
)
"""Root modules and subsystems any layer may import: they import no core folder."""


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    names: tuple[str, ...]
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> list[Import]:
    """Every import of a package module by ``name``: top level, in functions and under ``TYPE_CHECKING`` alike."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                target, names = (submodule, ()) if submodule in MODULES else (base, (alias.name,))
                if target in MODULES and target != name:
                    found.append(Import(name, target, names, node.lineno))
        elif isinstance(node, ast.Import):
            found += [Import(name, a.name, (), node.lineno) for a in node.names if a.name in MODULES and a.name != name]
    return found


IMPORTS = [edge for name in MODULES for edge in imports_of(name)]


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    return CORE_LAYERS.index(parts[1]) if len(parts) > 2 and parts[1] in CORE_LAYERS else None


def circles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for edge in IMPORTS:
        graph[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([*component, node]))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_circles() -> None:
    assert circles() == []


def test_the_detector_finds_a_circle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: two modules importing each other are one circle."""
    a, b = "claudecode_model._history.plan", "claudecode_model._history.digest"
    monkeypatch.setattr(f"{__name__}.IMPORTS", [*IMPORTS, Import(b, a, (), 0)])

    assert any({a, b} <= set(circle) for circle in circles())


@pytest.mark.parametrize("folder", CORE_LAYERS)
def test_each_core_folder_says_what_lives_there_and_what_it_may_import(folder: str) -> None:
    """The folder's ``__init__.py`` docstring (read first by a maintainer) names the folders below it, as this test
    orders them."""
    docstring = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text())) or ""
    may_import = next((line for line in docstring.splitlines() if line.startswith("May import:")), "")
    below = CORE_LAYERS[: CORE_LAYERS.index(folder)]

    assert re.findall(r"`(_\w+)`", may_import) == list(below), f"{folder}/__init__.py: {may_import!r}"
    assert "the foundation" in may_import


def test_no_core_module_imports_from_a_higher_layer() -> None:
    upward = [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for edge in IMPORTS
        if (low := layer_of(edge.source)) is not None and (high := layer_of(edge.target)) is not None and high > low
    ]

    assert upward == []


def test_core_modules_import_no_root_module_but_the_foundation() -> None:
    reaching_up = [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for edge in IMPORTS
        if layer_of(edge.source) is not None
        and layer_of(edge.target) is None
        and edge.target.split(".")[1] not in FOUNDATION
    ]

    assert reaching_up == []


def test_no_module_imports_a_private_name_of_another() -> None:
    private = [
        f"{edge.source}:{edge.line} imports {name} from {edge.target}"
        for edge in IMPORTS
        for name in edge.names
        if name.startswith("_") and not name.startswith("__")
    ]

    assert private == []


def is_private(name: str) -> bool:
    return MODULES[name].name not in ("__init__.py", "__main__.py") and any(
        part.startswith("_") for part in name.split(".")[1:]
    )


@pytest.mark.parametrize("name", sorted(filter(is_private, MODULES)))
def test_every_private_module_states_its_names(name: str) -> None:
    tree = ast.parse(MODULES[name].read_text())
    declared = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    ]

    assert declared, f"{name} has no __all__"


def test_the_model_module_stays_a_thin_adapter() -> None:
    """``model.py`` holds the pydantic-ai contract only; what it needs lives in the layers below."""
    lines = len((PACKAGE / "model.py").read_text().splitlines())

    assert lines <= 330, f"model.py has {lines} lines"


REQUEST_PATH_FUNCTIONS = {
    "_turns/acquire.py": "acquire_session",
    "_turns/start.py": "start_turn",
    "_sessions/options.py": "build_options",
}
"""The functions every request runs through: each delegates its cases to small named helpers."""


@pytest.mark.parametrize(("module", "function"), REQUEST_PATH_FUNCTIONS.items())
def test_the_request_path_functions_stay_short(module: str, function: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text())
    [definition] = [
        node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
    ]
    lines = (definition.end_lineno or definition.lineno) - definition.lineno + 1

    assert lines < 60, f"{function} in {module} has {lines} lines"
