"""No module outside the platform layer (``_process/platform/``) makes a POSIX- or Linux-only process call: sending
signals with ``os.kill``, naming ``signal.SIGKILL`` or ``os.WNOHANG``, asking ``os.getuid`` or reading ``/proc``.
Those do not exist on Windows (and ``/proc`` not on macOS); each platform's way lives in its module of the layer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "claudecode_model"
PLATFORM_LAYER = PACKAGE / "_process" / "platform"

FORBIDDEN_ATTRIBUTES = {("os", "kill"), ("signal", "SIGKILL"), ("os", "WNOHANG"), ("os", "getuid")}
"""``module.name`` uses that are one platform's (``from module import name`` counts too)."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions (text, not calls)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def platform_calls(source: str) -> list[str]:
    """Where ``source`` uses one of the forbidden names or a ``/proc`` path (as ``line: what``)."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        match node:
            case ast.Attribute(value=ast.Name(id=module), attr=name) if (module, name) in FORBIDDEN_ATTRIBUTES:
                found.append(f"{node.lineno}: {module}.{name}")
            case ast.ImportFrom(module=str(module), names=names):
                imported = [alias.name for alias in names if (module, alias.name) in FORBIDDEN_ATTRIBUTES]
                found += [f"{node.lineno}: {module}.{name}" for name in imported]
            case ast.Constant(value=str(text)) if id(node) not in docstrings and (
                text == "/proc" or text.startswith("/proc/")
            ):
                found.append(f"{node.lineno}: {text!r}")
    return found


def test_no_module_outside_the_platform_layer_makes_a_platform_s_process_call() -> None:
    offending = {
        str(path.relative_to(PACKAGE)): calls
        for path in sorted(PACKAGE.rglob("*.py"))
        if PLATFORM_LAYER not in path.parents and (calls := platform_calls(path.read_text()))
    }

    assert offending == {}


def test_the_platform_layer_is_where_those_calls_are() -> None:
    """The check above looks at real code: the layer itself has each of them."""
    found = " ".join(call for path in PLATFORM_LAYER.rglob("*.py") for call in platform_calls(path.read_text()))

    for what in ("os.kill", "signal.SIGKILL", "os.WNOHANG", "os.getuid", "'/proc"):
        assert what in found


def test_the_check_finds_each_kind_of_call_and_ignores_docstrings() -> None:
    source = '''
"""Reads /proc/self/stat and calls os.kill: text only."""
import os, signal
from os import getuid
def stop(pid):
    """os.kill(pid, signal.SIGKILL) on /proc/1."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, os.WNOHANG)
    return open(f"/proc/{pid}/stat"), open("/proc")
'''

    assert sorted(platform_calls(source)) == [
        "4: os.getuid",
        "7: os.kill",
        "7: signal.SIGKILL",
        "8: os.WNOHANG",
        "9: '/proc'",
        "9: '/proc/'",
    ]
