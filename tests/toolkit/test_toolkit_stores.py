"""Ref ids and the two tool output stores."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from typing import TYPE_CHECKING

import pytest

from claudecode_model.toolkit import (
    DirectoryToolOutputStore,
    MemoryToolOutputStore,
    ToolOutputStore,
    is_ref_id,
    new_ref_id,
)

pytestmark = pytest.mark.filterwarnings("error")

if TYPE_CHECKING:
    from pathlib import Path


def test_ref_ids_have_a_short_prefix_and_fixed_shape() -> None:
    ref = new_ref_id()
    assert ref.startswith("out_")
    assert len(ref) == 30
    assert is_ref_id(ref)
    assert not is_ref_id("out_" + "i" * 26)  # not in the alphabet
    assert not is_ref_id("../../etc/passwd")
    assert not is_ref_id(ref + "0")


def test_ref_ids_do_not_collide_and_sort_by_time() -> None:
    refs = {new_ref_id() for _ in range(20_000)}
    assert len(refs) == 20_000
    earlier = new_ref_id()
    time.sleep(0.002)
    assert new_ref_id() > earlier


async def test_memory_store_round_trip() -> None:
    store = MemoryToolOutputStore()
    assert isinstance(store, ToolOutputStore)
    ref = new_ref_id()
    await store.save(ref, "a\r\nb é\n")
    assert await store.load(ref) == "a\r\nb é\n"
    assert await store.load(new_ref_id()) is None
    assert len(store) == 1
    assert store.total_bytes == len("a\r\nb é\n".encode())


async def test_memory_store_evicts_oldest_first_and_keeps_the_newest() -> None:
    store = MemoryToolOutputStore(max_bytes=10)
    refs = [new_ref_id() for _ in range(4)]
    for ref in refs[:3]:
        await store.save(ref, "1234")  # 4 bytes each: the third evicts the first
    assert await store.load(refs[0]) is None
    assert await store.load(refs[1]) == "1234"
    assert await store.load(refs[2]) == "1234"
    await store.save(refs[3], "x" * 50)  # larger than the whole budget: kept alone
    assert [await store.load(ref) for ref in refs] == [None, None, None, "x" * 50]
    assert store.total_bytes == 50


def test_memory_store_rejects_a_bad_budget() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryToolOutputStore(max_bytes=0)


async def test_directory_store_round_trip_and_sharing(tmp_path: Path) -> None:
    directory = tmp_path / "outputs"
    store = DirectoryToolOutputStore(directory)
    assert isinstance(store, ToolOutputStore)
    assert not directory.exists()  # created on the first save
    ref = new_ref_id()
    text = "line 1\r\nlínea 2\n\ud800 lone surrogate\n"
    await store.save(ref, text)
    assert await store.load(ref) == text
    assert sorted(p.name for p in directory.iterdir()) == [f"{ref}.txt"]  # no temporary file left
    # Another store on the same directory (another session or process) sees the output.
    assert await DirectoryToolOutputStore(directory).load(ref) == text
    assert await store.load(new_ref_id()) is None


async def test_directory_store_never_builds_paths_from_foreign_ids(tmp_path: Path) -> None:
    store = DirectoryToolOutputStore(tmp_path / "outputs")
    (tmp_path / "secret.txt").write_text("secret")
    assert await store.load("../secret") is None
    with pytest.raises(ValueError, match="not a ref id"):
        await store.save("../secret", "x")


async def test_directory_store_cleans_up_after_a_failed_write(tmp_path: Path) -> None:
    directory = tmp_path / "outputs"
    directory.mkdir()
    store = DirectoryToolOutputStore(directory)
    ref = new_ref_id()
    (directory / f"{ref}.txt").mkdir()  # the rename onto a directory fails
    with pytest.raises(IsADirectoryError):
        await store.save(ref, "text")
    assert [p.name for p in directory.iterdir()] == [f"{ref}.txt"]


async def test_concurrent_saves(tmp_path: Path) -> None:
    for store in (MemoryToolOutputStore(), DirectoryToolOutputStore(tmp_path)):
        refs = [new_ref_id() for _ in range(50)]
        await asyncio.gather(*(store.save(ref, ref * 3) for ref in refs))
        assert [await store.load(ref) for ref in refs] == [ref * 3 for ref in refs]


async def test_directory_store_keeps_outputs_private(tmp_path: Path) -> None:
    directory = tmp_path / "outputs"
    store = DirectoryToolOutputStore(directory)
    ref = new_ref_id()
    old = os.umask(0o022)
    try:
        await store.save(ref, "a tool's output")
    finally:
        os.umask(old)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / f"{ref}.txt").stat().st_mode) == 0o600
