"""The Windows branch of the platform layer, with the Windows API faked at its seam (``windows.use_api``): each CLI in
a Job Object with kill-on-close, processes ended with ``TerminateProcess`` / ``TerminateJobObject``, liveness read
from the exit code (no signal), memory from ``GlobalMemoryStatusEx``, locks through ``msvcrt``."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Iterator

import pytest

from claudecode_model._process.platform import windows
from tests.platforms.fake_windows import FakeWindows


@pytest.fixture
def fake() -> Iterator[FakeWindows]:
    fake = FakeWindows()
    windows.use_api(fake)
    yield fake
    windows.stop_tagged([f"tag-{letter}" for letter in "abcde"])  # no job of a test outlives it
    windows.use_api(None)


def test_a_cli_tied_to_the_program_ends_with_it_however_the_program_ends(fake: FakeWindows):
    fake.start(10, 11)

    windows.tie_to_program("tag-a", 10)

    [job] = fake.jobs.values()
    assert job == {10}
    assert [kind for kind, _ in fake.open_handles.values()] == ["job"]  # the process handle was closed, the job kept
    fake.program_dies()
    assert fake.running == {11}  # the CLI (and whatever it started, in its job) ended; nothing else


def test_liveness_is_read_without_a_signal(fake: FakeWindows):
    fake.start(20)
    fake.exit_codes[21] = 0

    assert windows.process_alive(20)
    assert not windows.process_alive(21)
    assert not windows.process_alive(22)  # no such process
    assert windows.process_exited(21)
    assert not windows.process_exited(20)
    assert not windows.process_exited(None)
    assert not [call for call in fake.calls if call.startswith("terminate")]
    assert fake.open_handles == {}  # every handle opened to ask was closed


def test_stopping_a_tied_cli_ends_its_job_and_closes_it(fake: FakeWindows):
    fake.start(30)
    windows.tie_to_program("tag-b", 30)

    windows.stop_child(30)

    assert "terminate_job [30]" in fake.calls
    assert 30 not in fake.running
    assert fake.open_handles == {}


def test_a_cli_without_a_job_is_terminated_alone(fake: FakeWindows):
    fake.start(40, 41)

    windows.signal_group(40, force=True)
    windows.signal_process(41)

    assert fake.calls.count("terminate_process 40") == 1
    assert fake.calls.count("terminate_process 41") == 1
    assert fake.running == set()


def test_stopping_by_tag_ends_only_those_jobs(fake: FakeWindows):
    fake.start(50, 51)
    windows.tie_to_program("tag-c", 50)
    windows.tie_to_program("tag-d", 51)

    assert windows.signal_tagged(["tag-c"]) == 1
    assert fake.running == {51}
    assert windows.stop_tagged(["tag-c", "tag-d"]) == 2

    assert fake.running == set()
    assert fake.open_handles == {}


def test_a_process_that_is_gone_is_not_tied(fake: FakeWindows):
    windows.tie_to_program("tag-e", 60)

    assert fake.jobs == {}
    assert fake.open_handles == {}


def test_the_memory_cap_reads_the_available_physical_memory(fake: FakeWindows):
    fake.available = 3 * 1024**3

    assert windows.available_memory_mb() == 3072
    fake.available = None
    assert windows.available_memory_mb() is None


def test_a_cli_starts_in_a_process_group_of_its_own():
    assert windows.own_session_options() == {"creationflags": 0x00000200}  # CREATE_NEW_PROCESS_GROUP


def test_no_watcher_process_no_unix_socket_no_uid():
    assert windows.LIFELINE == "job"
    assert not windows.UNIX_SOCKETS
    assert windows.peer_credentials(object()) is None
    assert windows.CLI_BINARY == "claude.exe"
    assert windows.user_id()


def test_owner_locks_go_through_msvcrt(monkeypatch: pytest.MonkeyPatch):
    held: set[int] = set()

    def locking(fd: int, mode: int, size: int) -> None:
        assert size == 1
        if mode == msvcrt.LK_UNLCK:
            held.discard(fd)
        elif fd in held or fd < 0:
            raise OSError(36, "resource deadlock avoided")
        else:
            held.add(fd)

    msvcrt = types.SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0, locking=locking)
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)

    assert windows.lock_exclusive(5)
    assert windows.is_locked(-1)  # another holder's lock
    assert not windows.is_locked(6)
    assert 6 not in held  # the probe let go of what it took


def test_only_the_proactor_loop_can_start_the_cli(monkeypatch: pytest.MonkeyPatch):
    class ProactorEventLoop:  # what asyncio has on Windows (and is its default loop there)
        pass

    selector = asyncio.SelectorEventLoop()
    try:
        problem = windows.event_loop_problem(selector)
        monkeypatch.setattr(asyncio, "ProactorEventLoop", ProactorEventLoop, raising=False)

        assert windows.event_loop_problem(ProactorEventLoop()) is None
        assert windows.event_loop_problem(selector) == problem
    finally:
        selector.close()
    assert problem is not None
    assert "cannot start subprocesses on Windows" in problem
    assert "Proactor" in problem
