"""How the documentation's code blocks are found and run: markers, pytest modules, and failures that name the page's
line (no CLI here; tests/docs/test_code_blocks.py runs the real blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests._support.doc_blocks import RUNNER, code_blocks
from tests._support.subprocesses import run_python

if TYPE_CHECKING:
    from pathlib import Path

PAGE = """\
# A page

<!-- needs-login: a Logfire account -->
```python
import logfire
```

Text between.

<!-- needs-postgresql -->

```python
import os
```

```bash
echo hello
```

```python
# test_example.py
def test_it():
    assert True
```

```python
x = 1
raise ValueError(f"broken at {x}")
```
"""


def test_blocks_carry_their_language_line_and_markers(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)

    blocks = code_blocks(page)

    assert [(block.language, block.line) for block in blocks] == [
        ("python", 5),
        ("python", 13),
        ("bash", 17),
        ("python", 21),
        ("python", 27),
    ]
    assert [block.needs_login for block in blocks] == ["a Logfire account", None, None, None, None]
    assert [block.needs_postgresql for block in blocks] == [False, True, False, False, False]
    assert [block.pytest_module for block in blocks] == [None, None, None, "test_example.py", None]
    assert blocks[1].code == "import os\n"


def test_a_failing_block_names_the_page_and_its_line(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    failing = code_blocks(page)[-1]
    (tmp_path / "block.py").write_text(failing.code)

    completed = run_python("-c", RUNNER, str(page), str(failing.line), "block.py", cwd=tmp_path, timeout=60)

    assert completed.returncode == 1
    assert f'File "{page}", line 28' in completed.stderr  # the line of the raise
    assert 'raise ValueError(f"broken at {x}")' in completed.stderr  # the page's own line, shown from the page
    assert "ValueError: broken at 1" in completed.stderr


def test_a_block_may_await_at_the_top_level(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text('```python\nimport asyncio\n\nawait asyncio.sleep(0)\nprint("awaited", __name__)\n```\n')
    [block] = code_blocks(page)
    (tmp_path / "block.py").write_text(block.code)

    completed = run_python("-c", RUNNER, str(page), str(block.line), "block.py", cwd=tmp_path, timeout=60)

    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "awaited __main__\n", "")
