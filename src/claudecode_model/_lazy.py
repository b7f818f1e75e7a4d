"""Lazy re-exports for the package ``__init__`` modules (PEP 562): a name is imported from its module at first use.

It imports nothing beyond ``importlib``, so that light entry points stay light. It lives in ``ipc`` because the
IPC bridge process needs nothing outside this package; the package root and the other packages use it too.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing alone costs the bridge milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, MutableMapping
    from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: MutableMapping[str, Any],
    exports: Collection[str],
    sources: Mapping[str, str],
    *,
    default: str | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are ``namespace``.

    ``exports`` is the package's ``__all__``. A name of ``sources`` is imported from the module it maps to (a
    relative module name resolves against the package), any other name of ``exports`` from the ``default``
    module; the value is then kept in ``namespace``, so each name is looked up once.
    """
    package = str(namespace["__name__"])

    def __getattr__(name: str) -> Any:
        source = sources.get(name, default if name in exports else None)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports, *sources})

    return __getattr__, __dir__
