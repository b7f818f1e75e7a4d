"""``dbos_config`` and the SQLite check: the DBOS set-up is refused, with the reason, where it cannot launch."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from claudecode_model import DurableSetupError, check_dbos_sqlite, dbos_config


def test_the_sqlite_check_refuses_python_3_12_with_sqlite_before_3_42():
    with pytest.raises(DurableSetupError, match=r"SQLite 3\.40\.1 under Python 3\.12.*version_timestamp"):
        check_dbos_sqlite(python=(3, 12), sqlite=(3, 40, 1))
    check_dbos_sqlite(python=(3, 12), sqlite=(3, 42, 0))
    check_dbos_sqlite(python=(3, 11), sqlite=(3, 31, 1))


def test_the_sqlite_check_matches_what_sqlite_computes_here():
    """The check's premise, measured on this machine's SQLite: ``unixepoch('subsec')`` is NULL before 3.42."""
    value = sqlite3.connect(":memory:").execute("SELECT unixepoch('subsec')").fetchone()[0]
    if sqlite3.sqlite_version_info >= (3, 42):
        assert value is not None
    else:
        assert value is None
        if sys.version_info >= (3, 12):
            with pytest.raises(DurableSetupError):
                check_dbos_sqlite()


def test_default_is_a_sqlite_file_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    if sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42):
        with pytest.raises(DurableSetupError):
            dbos_config("my-agents")
        return
    config = dbos_config("my-agents", application_version="v1", executor_id="worker-1")
    assert config == {
        "name": "my-agents",
        "system_database_url": f"sqlite:///{tmp_path / 'my-agents.dbos.sqlite'}",
        "application_version": "v1",
        "executor_id": "worker-1",
    }


def test_postgres_urls_pass_through_and_paths_become_sqlite_urls(tmp_path: Path):
    url = "postgresql://app@db.internal/agents"
    assert dbos_config("agents", database_url=url)["system_database_url"] == url
    if sys.version_info < (3, 12) or sqlite3.sqlite_version_info >= (3, 42):
        assert dbos_config("agents", database_url=tmp_path / "x.sqlite")["system_database_url"] == (
            f"sqlite:///{tmp_path / 'x.sqlite'}"
        )


def test_bad_names_and_urls_are_refused_by_name(tmp_path: Path):
    with pytest.raises(ValueError, match="name must be"):
        dbos_config("My Agents")
    with pytest.raises(ValueError, match="database_url must be a PostgreSQL URL"):
        dbos_config("agents", database_url="mysql://db/agents")
    with pytest.raises(ValueError, match="does not exist"):
        dbos_config("agents", database_url=tmp_path / "missing" / "x.sqlite")
