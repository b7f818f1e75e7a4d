"""Lazy package attributes (PEP 562), shared by the packages whose light entry points must not import everything.

Standard library only: the IPC bridge process imports the packages that use it at start-up.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping


def load_export(namespace: MutableMapping[str, object], exports: Mapping[str, str], name: str) -> object:
    """Import the module ``exports`` names for ``name``, cache the attribute in ``namespace`` and return it.

    ``namespace`` is the package's ``globals()``; ``exports`` maps each lazy name to its module's full name.

    Raises:
        AttributeError: ``name`` is not one of ``exports``.
    """
    module_name = exports.get(name)
    if module_name is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    namespace[name] = value
    return value
