"""The code blocks of the user documentation (README.md and docs/*.md), and how to run a Python block as a user
would: in a fresh interpreter, with the package installed, the file and line of the block in every traceback."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NEEDS_LOGIN = re.compile(r"<!--\s*needs-login:\s*(?P<reason>\S.*?)\s*-->")
"""The marker of a block that cannot run offline: ``<!-- needs-login: what it needs -->`` on the line before it."""
NEEDS_POSTGRESQL = "<!-- needs-postgresql -->"
"""The marker of a block that reads a PostgreSQL URL from ``DATABASE_URL`` (the tests give it a local server's)."""

_FENCE = re.compile(r"^```(?P<info>[\w-]*)\s*$")
_PYTEST_MODULE = re.compile(r"# (?P<name>test_\w+\.py)\n")


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block of a page: its language, its text, where it starts, and why it cannot run offline, if so."""

    page: Path
    line: int
    """The line of the block's first line of code (1-based)."""
    language: str
    code: str
    needs_login: str | None
    needs_postgresql: bool

    @property
    def where(self) -> str:
        """``docs/page.md:LINE``, the block's place for a reader."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def pytest_module(self) -> str | None:
        """The file name of a block that is a pytest module (its first line is a comment naming it), else None."""
        found = _PYTEST_MODULE.match(self.code)
        return found["name"] if found else None


def code_blocks(page: Path) -> list[CodeBlock]:
    """Every fenced block of ``page``, in order (fences at the start of a line; a block's end is the next fence)."""
    lines = page.read_text().splitlines()
    blocks: list[CodeBlock] = []
    start: int | None = None
    language = ""
    for number, text in enumerate(lines, start=1):
        fence = _FENCE.match(text)
        if fence is None:
            continue
        if start is None:
            start, language = number, fence["info"]
            continue
        before = next((line.strip() for line in reversed(lines[: start - 1]) if line.strip()), "")
        login = NEEDS_LOGIN.fullmatch(before)
        code = "\n".join(lines[start : number - 1]) + "\n"
        blocks.append(
            CodeBlock(page, start + 1, language, code, login["reason"] if login else None, before == NEEDS_POSTGRESQL)
        )
        start = None
    if start is not None:
        raise ValueError(f"{page.name}:{start}: a code block is never closed")
    return blocks


def python_blocks() -> list[CodeBlock]:
    """Every ``python`` block of the user documentation."""
    return [block for page in USER_DOCS for block in code_blocks(page) if block.language == "python"]


RUNNER = """\
import ast, asyncio, inspect, sys

page, line, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, encoding="utf-8") as file:
    source = "\\n" * (line - 1) + file.read()  # line numbers of the page, so tracebacks show the page's lines
code = compile(source, page, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
sys.argv = [page]
namespace = {"__name__": "__main__", "__file__": page}
if code.co_flags & inspect.CO_COROUTINE:  # top-level await, as in `python -m asyncio` or a notebook
    asyncio.run(eval(code, namespace))
else:
    exec(code, namespace)
"""
"""``python -c RUNNER PAGE LINE CODE_FILE`` runs a block's code as a script of the page, at the block's line."""
