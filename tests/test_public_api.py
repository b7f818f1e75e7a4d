"""The package root: every public name resolves, ``__all__`` is complete, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import claudecode_model


def test_all_lists_exactly_the_lazy_exports():
    assert set(claudecode_model.__all__) == {"__version__", *claudecode_model._EXPORTS}
    assert len(claudecode_model.__all__) == len(set(claudecode_model.__all__))


def test_every_public_name_resolves():
    for name in claudecode_model.__all__:
        assert getattr(claudecode_model, name) is not None, name


def test_importing_the_root_does_not_import_pydantic_ai():
    code = "import sys, claudecode_model; print('pydantic_ai' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
