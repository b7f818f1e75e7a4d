"""Durable agents on DBOS: a checked DBOS configuration, SQLite on one machine or PostgreSQL for many workers.

pydantic-ai's DBOS integration (``pydantic_ai.durable_exec.dbos``: the ``DBOSDurability`` capability, or the older
``DBOSAgent`` wrapper) makes each model request a DBOS step. This module only prepares DBOS for it: it picks the
system database and refuses, with the reason and the fix, a SQLite set-up that DBOS cannot launch on.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from claudecode_model.exceptions import ClaudeCodeError

if TYPE_CHECKING:
    from dbos import DBOSConfig

__all__ = ["DurableSetupError", "check_dbos_sqlite", "dbos_config"]

_NAME = re.compile(r"[a-z0-9_-]{3,256}")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


class DurableSetupError(ClaudeCodeError):
    """The durable-execution set-up cannot work here (the message says why and what to use instead)."""


def check_dbos_sqlite(
    *,
    python: tuple[int, ...] = tuple(sys.version_info[:2]),
    sqlite: tuple[int, ...] = sqlite3.sqlite_version_info,
) -> None:
    """Raise :class:`DurableSetupError` where DBOS cannot launch on a SQLite system database.

    On Python 3.12 and later, DBOS 3.4 gives its SQLite tables the column default ``unixepoch('subsec')``. The
    ``subsec`` modifier exists only from SQLite 3.42; older libraries (Debian 12 ships 3.40) evaluate it to NULL,
    and DBOS's launch fails with ``NOT NULL constraint failed: application_versions.version_timestamp``. On
    Python 3.11 DBOS uses ``strftime`` instead, which every SQLite has.
    """
    if python >= (3, 12) and sqlite < (3, 42):
        found = ".".join(map(str, sqlite))
        raise DurableSetupError(
            f"DBOS cannot launch on SQLite {found} under Python {python[0]}.{python[1]}: its SQLite schema needs "
            "SQLite 3.42 or later there (unixepoch('subsec') is NULL before it, and DBOS fails with 'NOT NULL "
            "constraint failed: application_versions.version_timestamp'). Use PostgreSQL "
            "(database_url='postgresql://...'), or a Python built with SQLite 3.42+."
        )


def dbos_config(
    name: str,
    *,
    database_url: str | os.PathLike[str] | None = None,
    application_version: str | None = None,
    executor_id: str | None = None,
) -> DBOSConfig:
    """A DBOS configuration for durable Claude Code agents.

    Args:
        name: The DBOS application name (3-256 characters: lower-case letters, digits, ``-`` and ``_``).
        database_url: Where DBOS keeps workflow state: a PostgreSQL URL (``postgresql://user@host/db``; what
            several workers share), a ``sqlite:///`` URL or a file path (one machine). By default a SQLite file
            ``<name>.dbos.sqlite`` in the working directory.
        application_version: Pin the version DBOS recovers workflows for; by default DBOS derives it from the
            workflow code, so every worker must run the same code.
        executor_id: This worker's identity (workflows it started are recovered by a worker with the same id, or
            handed to another one).

    Raises:
        ValueError: for a bad name or URL.
        DurableSetupError: for a SQLite database DBOS cannot launch on in this Python (see
            :func:`check_dbos_sqlite`).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"name must be 3-256 characters of lower-case letters, digits, '-' and '_' (a DBOS app name), not {name!r}"
        )
    url = _system_database_url(name, database_url)
    if url.startswith("sqlite"):
        check_dbos_sqlite()
    config: DBOSConfig = {"name": name, "system_database_url": url}
    if application_version is not None:
        config["application_version"] = application_version
    if executor_id is not None:
        config["executor_id"] = executor_id
    return config


def _system_database_url(name: str, database_url: str | os.PathLike[str] | None) -> str:
    if database_url is None:
        return f"sqlite:///{Path.cwd() / f'{name}.dbos.sqlite'}"
    if isinstance(database_url, os.PathLike) or (isinstance(database_url, str) and "://" not in database_url):
        path = Path(database_url)
        if not path.parent.is_dir():
            raise ValueError(f"database_url {str(path)!r}: the directory {str(path.parent)!r} does not exist")
        return f"sqlite:///{path.resolve()}"
    if not isinstance(database_url, str):
        raise ValueError(f"database_url must be a URL or a path, not {database_url!r}")
    if database_url.startswith("sqlite:///") or database_url.startswith(_POSTGRES_SCHEMES):
        return database_url
    raise ValueError(
        f"database_url must be a PostgreSQL URL (postgresql://...), a sqlite:/// URL or a file path, "
        f"not {database_url.split('://', 1)[0]}://..."
    )
