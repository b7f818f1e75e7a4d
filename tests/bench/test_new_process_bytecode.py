"""The new-process suite compiles this library's byte code first, as installing its wheel does, so that a checkout
run under ``PYTHONDONTWRITEBYTECODE=1`` does not compile every module in each measured process."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from bench._process_suites import LIBRARY, compile_library


def test_every_module_of_the_library_gets_its_byte_code(tmp_path: Path) -> None:
    package = tmp_path / LIBRARY.name
    shutil.copytree(LIBRARY, package, ignore=shutil.ignore_patterns("__pycache__"))
    sources = sorted(package.rglob("*.py"))

    compile_library(package)

    missing = [source for source in sources if not Path(importlib.util.cache_from_source(str(source))).is_file()]
    assert len(sources) > 100
    assert missing == []
