"""Where tool outputs are kept: ref ids and the two stores (memory, directory)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["DirectoryToolOutputStore", "MemoryToolOutputStore", "ToolOutputStore", "is_ref_id", "new_ref_id"]

logger = logging.getLogger(__name__)

_REF_PREFIX = "out_"
# Crockford's base32, lower case: no i, l, o, u, so ids survive being read aloud or retyped by a model.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_REF_BODY_LEN = 26  # 48 bits of milliseconds + 80 random bits = 128 bits = 26 base32 digits
_REF_RE = re.compile(rf"^{_REF_PREFIX}[{_ALPHABET}]{{{_REF_BODY_LEN}}}$")


def new_ref_id() -> str:
    """A fresh ref id such as ``out_01jd6x4m0c9v7k2q8s3t5w6y7z``.

    Like a ULID: 48 bits of Unix milliseconds then 80 random bits from :mod:`secrets`, so ids sort by creation
    time and cannot collide across runs, sessions or processes.
    """
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    digits = []
    for _ in range(_REF_BODY_LEN):
        value, digit = divmod(value, 32)
        digits.append(_ALPHABET[digit])
    return _REF_PREFIX + "".join(reversed(digits))


def is_ref_id(value: str) -> bool:
    """Whether ``value`` has the shape of an id made by :func:`new_ref_id`."""
    return _REF_RE.fullmatch(value) is not None


@runtime_checkable
class ToolOutputStore(Protocol):
    """Keeps the full text of tool outputs under their ref ids.

    Implement these two coroutines to keep outputs elsewhere (a database, object storage, ...).
    """

    async def save(self, ref_id: str, text: str) -> None:
        """Keep ``text`` under ``ref_id`` (a fresh id from :func:`new_ref_id`)."""
        ...

    async def load(self, ref_id: str) -> str | None:
        """The text saved under ``ref_id``, or ``None`` when there is none (unknown, malformed or evicted)."""
        ...


class MemoryToolOutputStore:
    """Keeps tool outputs in memory (the default store).

    Holds at most ``max_bytes`` of text (UTF-8; default 64 MiB, ``None`` for no limit): when a new output
    would exceed it, the oldest outputs are evicted and their refs become unknown. The newest output is kept.

    Example:
        ```python
        store = MemoryToolOutputStore(max_bytes=8 * 1024 * 1024)
        agent = Agent(model, capabilities=[ToolOutputCache(store=store)])
        ```
    """

    def __init__(self, *, max_bytes: int | None = 64 * 1024 * 1024) -> None:
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive or None, got {max_bytes}")
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()  # tools may run in worker threads

    def __len__(self) -> int:
        return len(self._items)

    @property
    def total_bytes(self) -> int:
        """UTF-8 size of all outputs held."""
        return self._total

    async def save(self, ref_id: str, text: str) -> None:
        size = len(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            old = self._items.pop(ref_id, None)
            if old is not None:
                self._total -= old[1]
            self._items[ref_id] = (text, size)
            self._total += size
            while self.max_bytes is not None and self._total > self.max_bytes and len(self._items) > 1:
                evicted, (_, evicted_size) = self._items.popitem(last=False)
                self._total -= evicted_size
                logger.debug("evicted tool output %s (%d bytes)", evicted, evicted_size)

    async def load(self, ref_id: str) -> str | None:
        with self._lock:
            item = self._items.get(ref_id)
        return None if item is None else item[0]


class DirectoryToolOutputStore:
    """Keeps each tool output in a file ``<directory>/<ref_id>.txt`` (UTF-8), so refs outlive the process.

    The directory is created on the first save (owner-only, 0700, when this store creates it). Files are written
    atomically (a temporary file, then a rename), readable by their owner only (0600), and nothing is ever deleted:
    the directory belongs to you.

    Example:
        ```python
        agent = Agent(model, capabilities=[ToolOutputCache(store=DirectoryToolOutputStore(".tool-outputs"))])
        ```
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, ref_id: str) -> Path:
        return self.directory / f"{ref_id}.txt"

    async def save(self, ref_id: str, text: str) -> None:
        if not is_ref_id(ref_id):
            raise ValueError(f"not a ref id: {ref_id!r}")
        await asyncio.to_thread(self._write, ref_id, text)

    async def load(self, ref_id: str) -> str | None:
        if not is_ref_id(ref_id):  # never build a path from anything else
            return None
        return await asyncio.to_thread(self._read, ref_id)

    def _write(self, ref_id: str, text: str) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # outputs are conversation content
        # Owner-only (0600), and so is the file it becomes.
        fd, tmp = tempfile.mkstemp(prefix=f".{ref_id}.", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
                handle.write(text)
            os.replace(tmp, self._path(ref_id))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self, ref_id: str) -> str | None:
        try:
            with self._path(ref_id).open(encoding="utf-8", errors="surrogatepass", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
