"""A fake of the Windows API the platform layer calls (:class:`~claudecode_model._process.platform.windows.WindowsAPI`):
processes by pid with an exit code, handles, and Job Objects that end their processes when terminated or when their
last handle closes (kill-on-close), as Windows does."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


@dataclass
class FakeWindows:
    running: set[int] = field(default_factory=set)
    """The pids of the processes that run."""
    exit_codes: dict[int, int] = field(default_factory=dict)
    """The exit code of each process that ended."""
    open_handles: dict[int, tuple[str, int]] = field(default_factory=dict)
    """Each open handle: ``("process", pid)`` or ``("job", job id)``."""
    jobs: dict[int, set[int]] = field(default_factory=dict)
    """The pids in each Job Object (every job here is kill-on-close)."""
    calls: list[str] = field(default_factory=list)
    available: int | None = 8 * 1024**3
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(100))

    def start(self, *pids: int) -> None:
        self.running |= set(pids)

    def end(self, pid: int, code: int = 1) -> None:
        if pid in self.running:
            self.running.discard(pid)
            self.exit_codes[pid] = code

    def open_process(self, pid: int) -> int | None:
        self.calls.append(f"open_process {pid}")
        if pid not in self.running and pid not in self.exit_codes:
            return None
        handle = next(self._numbers)
        self.open_handles[handle] = ("process", pid)
        return handle

    def _pid(self, handle: int) -> int:
        kind, pid = self.open_handles[handle]
        assert kind == "process", f"handle {handle} is not a process"
        return pid

    def exit_code(self, process: int) -> int | None:
        return self.exit_codes.get(self._pid(process))

    def terminate_process(self, process: int) -> None:
        pid = self._pid(process)
        self.calls.append(f"terminate_process {pid}")
        self.end(pid)

    def create_job(self) -> int:
        job = next(self._numbers)
        self.jobs[job] = set()
        handle = next(self._numbers)
        self.open_handles[handle] = ("job", job)
        self.calls.append("create_job")
        return handle

    def _job(self, handle: int) -> int:
        kind, job = self.open_handles[handle]
        assert kind == "job", f"handle {handle} is not a job"
        return job

    def assign_to_job(self, job: int, process: int) -> None:
        pid = self._pid(process)
        self.calls.append(f"assign_to_job {pid}")
        self.jobs[self._job(job)].add(pid)

    def terminate_job(self, job: int) -> None:
        if job not in self.open_handles:
            return  # an invalid handle: Windows refuses (the real API's failure is ignored, as here)
        members = self.jobs[self._job(job)]
        self.calls.append(f"terminate_job {sorted(members)}")
        for pid in members:
            self.end(pid)

    def close_handle(self, handle: int) -> None:
        if handle not in self.open_handles:
            return  # an invalid handle: Windows refuses
        kind, target = self.open_handles.pop(handle)
        if kind == "job" and not any(other == ("job", target) for other in self.open_handles.values()):
            for pid in self.jobs[target]:  # the last handle of a kill-on-close job
                self.end(pid)

    def available_memory_bytes(self) -> int | None:
        return self.available

    def program_dies(self) -> None:
        """The program ends however it does: Windows closes every handle it held."""
        for handle in list(self.open_handles):
            if handle in self.open_handles:
                self.close_handle(handle)
