"""The user documentation speaks of the product: no internal vocabulary, no stale API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda page: page.name)
def test_no_internal_vocabulary(page: Path):
    text = page.read_text()

    assert not re.findall(r"\bseed \d{3}\b|\bthe seed'?s?\b|\bFR-\d+|\bSC-\d+", text, re.I)


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda page: page.name)
def test_usage_is_a_property(page: Path):
    assert ".usage()" not in page.read_text()


def test_docs_name_the_login_command():
    assert "claudecode-model login" in (ROOT / "README.md").read_text()
    assert "claude login" not in (ROOT / "README.md").read_text()
