"""The benchmark's process sampler counts the CLI processes under a process and their memory (no Claude Code CLI:
a shell script named ``fake-cli`` stands in for it)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench._lean_suites import back_within
from bench._sampler import Sample, TreeSampler, own_cpu

# Run as "fake-cli": a CLI that started a command; as "fake-cli child": the same program as its own child (what a
# CLI forking to run a command looks like before the exec).
FAKE_CLI = """#!/bin/sh
if [ "$1" = child ]; then sleep 30; exit 0; fi
"$0" child &
sleep 30
"""

FAKE = frozenset({"fake-cli"})


@pytest.fixture
def fake_cli(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    script = tmp_path / "fake-cli"
    script.write_text(FAKE_CLI)
    script.chmod(0o755)
    process = subprocess.Popen([str(script)], start_new_session=True)
    yield process
    os.killpg(process.pid, 9)
    process.wait()


def test_a_cli_and_its_children_are_one_cli_whose_memory_is_summed(fake_cli: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while _processes(fake_cli.pid) < 4:  # the script, its "claude" child and their two sleeps
        assert time.monotonic() < deadline, "the fake CLI did not start its children"
        time.sleep(0.02)

    sample = TreeSampler(cli_names=FAKE).sample()

    assert sample.clis == 1  # the script's "fake-cli" child is not a second CLI
    assert 0 < sample.rss_mib < sample.tree_rss_mib  # the sleeps are counted, the "fake-cli" child is not


def test_the_running_sampler_keeps_a_series_and_its_cpu_is_left_out(fake_cli: subprocess.Popen[bytes]) -> None:
    sampler = TreeSampler(interval=0.01, cli_names=FAKE).start()
    time.sleep(0.1)
    start = time.monotonic_ns()
    time.sleep(0.3)
    during_run = own_cpu()
    sampled = sampler.stop()

    assert len(sampled.samples) >= 10
    assert sampled.max_clis == 1
    assert sampled.max_rss_mib > 0
    assert sampled.cpu > 0
    assert during_run <= time.process_time() - sampled.cpu + 0.01
    assert [sample.at for sample in sampled.samples] == sorted(sample.at for sample in sampled.samples)
    window = sampler.window(start, start + 100_000_000)
    assert window.samples[0].at < start  # the state when the window opened
    assert all(sample.at <= start + 100_000_000 for sample in window.samples)


def _processes(root: int) -> int:
    """How many processes the fake CLI's session has (itself included)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getsid(int(entry.name)) == root:
                count += 1
        except OSError:
            continue
    return count


def _samples(*clis: int, every: float = 1.0) -> list[Sample]:
    return [Sample(at=int(index * every * 1e9), clis=count, rss_mib=0.0, tree_rss_mib=0.0) for index, count in
            enumerate(clis)]  # fmt: skip


def test_back_within_the_bound_is_the_start_of_the_last_calm_stretch_once_it_lasted() -> None:
    samples = _samples(16, 16, 5, 3, 4, 2, 2, 2, 2)

    assert back_within(samples, since=0, now=samples[-1].at) == 5.0
    assert back_within(samples[:7], since=0, now=samples[6].at) is None  # calm for 1 s only so far
    assert back_within(_samples(2, 2, 2), since=0, now=int(2e9)) == 0.0
