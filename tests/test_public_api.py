"""The package root: every public name resolves, ``__all__`` is complete, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import claudecode_model
import claudecode_model.exceptions


def test_all_lists_exactly_the_lazy_exports():
    # The names _EXPORTS does not map are the exception classes of claudecode_model.exceptions.
    exceptions = set(claudecode_model.__all__) - {"__version__", *claudecode_model._EXPORTS}
    assert exceptions <= set(claudecode_model.exceptions.__all__)
    assert all(issubclass(getattr(claudecode_model.exceptions, name), Exception) for name in exceptions)
    assert len(exceptions) == 34
    assert len(claudecode_model.__all__) == len(set(claudecode_model.__all__))


def test_every_public_name_resolves():
    for name in claudecode_model.__all__:
        assert getattr(claudecode_model, name) is not None, name


def test_importing_the_root_does_not_import_pydantic_ai():
    code = "import sys, claudecode_model; print('pydantic_ai' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
