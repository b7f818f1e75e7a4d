"""Helpers of the session store tests."""

from __future__ import annotations

from pathlib import Path


def delete_sqlite_file(path: Path) -> None:
    """Delete a SQLite database file and its WAL files, as someone tidying up a disk might while it is in use."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
