"""Which CLI sessions this process is using, and the session transcripts it made and must remove.

A session id is *in use* while a CLI process started here holds it (during a turn, or kept idle for the next one)
and while a turn starts from its transcript (a fork reads it). No second process may write to a transcript in use,
so a run that needs a session in use branches from it instead. Transcripts made for a single purpose (a replayed
history, a branch, a session started with ``claude_code_session="new"``) are removed as soon as nothing uses them,
so that replays do not pile up on disk. One ledger serves every model of the process (:data:`PROCESS_LEDGER`).

It also remembers the transcript entries a rewind here cut off (a CLI that served a new conversation in place of its
old one): a turn that read the transcript just before the cut then replays its history instead of resuming it.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from claudecode_model._history.transcripts import remove_transcript

__all__ = ["PROCESS_LEDGER", "SessionLedger"]


class SessionLedger:
    """Uses of session ids and the transcripts to remove once unused (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uses: Counter[str] = Counter()
        self._owned: dict[str, Path] = {}
        self._cut: OrderedDict[tuple[str, str], None] = OrderedDict()

    def in_use(self, session_id: str) -> bool:
        """Whether a CLI process or a starting turn uses ``session_id``."""
        with self._lock:
            return self._uses[session_id] > 0

    def use(self, session_id: str) -> Callable[[], None]:
        """Count a use of ``session_id``; the returned function ends it (calling it again does nothing)."""
        with self._lock:
            self._uses[session_id] += 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                self._uses[session_id] -= 1
                if self._uses[session_id] > 0:
                    return
                del self._uses[session_id]
                path = self._owned.pop(session_id, None)
            if path is not None:
                remove_transcript(path)

        return release

    def own(self, session_id: str, path: Path) -> None:
        """Remove the transcript at ``path`` once ``session_id`` is no longer used (now, if it is not)."""
        with self._lock:
            if self._uses[session_id] > 0:
                self._owned[session_id] = path
                return
        remove_transcript(path)

    def cut(self, session_id: str, entry_uuids: Iterable[str]) -> None:
        """A rewind cut the entries ``entry_uuids`` off the transcript of ``session_id``: no turn resumes at them."""
        with self._lock:
            for entry in entry_uuids:
                self._cut[session_id, entry] = None
                self._cut.move_to_end((session_id, entry))
            while len(self._cut) > _CUT_ENTRIES_REMEMBERED:
                self._cut.popitem(last=False)

    def was_cut(self, session_id: str, entry_uuid: str) -> bool:
        """Whether a rewind here cut the entry ``entry_uuid`` off the transcript of ``session_id``."""
        with self._lock:
            return (session_id, entry_uuid) in self._cut


_CUT_ENTRIES_REMEMBERED = 4096
"""The cut entries the ledger remembers (the most recent): only a turn that read a transcript just before its cut
needs them; a transcript read later shows the cut itself
(:func:`claudecode_model._history.transcripts.entries_position`)."""

PROCESS_LEDGER = SessionLedger()
"""The ledger of this process, shared by every model."""
