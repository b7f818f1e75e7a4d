"""The session store as a model's CLI sessions use it: every call bounded in time, failed writes written again.

claude-agent-sdk mirrors each turn's transcript entries into the store before the turn's result, and drops a batch
whose ``append`` failed (logging it and reporting a ``MirrorErrorMessage``), which leaves a gap in the stored
transcript. :class:`GuardedStore` wraps the user's store so that

* no call waits longer than the model's ``session_store_timeout`` (a locked SQLite file, a database that does not
  answer): the turn's answer comes, the write counts as failed; while a call that timed out goes on in the
  background (at most :data:`STUCK_CALL_SECONDS`), the store is not asked again: the first call waits
  :data:`STUCK_GRACE_SECONDS` for it, the others fail at once;
* the entries of a failed ``append`` are kept and sent again ahead of the session's next ``append`` (its next turn
  here), or when the model closes, which makes the stored transcript whole again; until then the gap is there for
  other workers to notice (:func:`~claudecode_model._history.transcripts.entries_position` calls such a transcript
  broken);
* the SDK's resume reads the transcript this library checked (:meth:`GuardedStore.staged`) instead of loading it
  again: what the CLI resumes is what was found whole, and a resume needs no second read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from claudecode_model.stores._check import DEFAULT_STORE_TIMEOUT

__all__ = [
    "MAX_UNSENT_ENTRIES",
    "MAX_UNSENT_SESSIONS",
    "STUCK_CALL_SECONDS",
    "STUCK_GRACE_SECONDS",
    "GuardedStore",
    "StoreUnavailableError",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

STUCK_CALL_SECONDS = 60.0
"""How long a store call that timed out may go on in the background before it is cancelled; until it ends, the
store is not asked again (each turn would wait as long again)."""

STUCK_GRACE_SECONDS = 0.5
"""How long the first call after a timeout waits for the call that timed out to end (a store that is back answers
it at once); later calls fail at once."""

MAX_UNSENT_ENTRIES = 20_000
"""The most entries of one session kept to be sent again; beyond it the session's stored copy stays broken."""

MAX_UNSENT_SESSIONS = 256
"""The most sessions with entries kept to be sent again (the oldest is given up first)."""

_KeyTuple = tuple[str, str, str]


class StoreUnavailableError(TimeoutError):
    """The session store is not asked: a call that timed out has not ended yet. A ``TimeoutError``, which the SDK's
    mirror does not retry (a retry would fail the same way)."""


class GuardedStore(SessionStore):
    """A :class:`SessionStore` with bounded calls, failed appends sent again, and transcripts staged for resumes."""

    def __init__(self, store: SessionStore, *, timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
        self.store = store
        self.timeout = timeout
        self._unsent: OrderedDict[_KeyTuple, OrderedDict[str, SessionStoreEntry]] = OrderedDict()
        self._staged: dict[_KeyTuple, list[list[SessionStoreEntry]]] = {}
        self._stuck: asyncio.Future[Any] | None = None
        self._graced = False

    def __repr__(self) -> str:
        return repr(self.store)

    # --- the SessionStore protocol ---------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append ``entries``, after any entries of the session a failed append left unsent."""
        k = _key(key)
        backlog = self._unsent.get(k)
        batch = entries
        if backlog:
            batch = list(_merged(backlog, entries).values())
        try:
            await self._bounded(self.store.append(key, batch), "append")
        except Exception:
            self._keep_unsent(k, entries)
            raise
        if backlog:
            self._unsent.pop(k, None)
            logger.info(
                "session store: %d entries of session %s that failed to reach it earlier are written now",
                len(backlog),
                key["session_id"],
            )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The transcript staged for this key (see :meth:`staged`), else the store's."""
        staged = self._staged.get(_key(key))
        if staged:
            return staged[-1]
        if key.get("subpath"):
            # A subagent's transcript: a resume goes on without it rather than fail.
            try:
                return await self._bounded(self.store.load(key), "load")
            except Exception as error:
                logger.warning("session store: the subagent transcript %s could not be loaded: %s", key, error)
                return None
        return await self._bounded(self.store.load(key), "load")

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The store's subagent transcripts of a session (none when it cannot list them, or fails to)."""
        implementation = getattr(type(self.store), "list_subkeys", None)
        if implementation is None or implementation is SessionStore.list_subkeys:
            return []
        try:
            return await self._bounded(self.store.list_subkeys(key), "list_subkeys")
        except Exception as error:
            logger.warning("session store: the subagent transcripts of %s could not be listed: %s", key, error)
            return []

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self._bounded(self.store.list_sessions(project_key), "list_sessions")

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self._bounded(self.store.list_session_summaries(project_key), "list_session_summaries")

    async def delete(self, key: SessionKey) -> None:
        self._unsent.pop(_key(key), None)
        await self._bounded(self.store.delete(key), "delete")

    # --- for the turn runner ---------------------------------------------------------------------------------

    @contextmanager
    def staged(self, key: SessionKey, entries: list[SessionStoreEntry]) -> Iterator[None]:
        """While in the block, :meth:`load` of ``key`` returns ``entries`` (the copy a resume was decided on)."""
        k = _key(key)
        stack = self._staged.setdefault(k, [])
        stack.append(entries)
        try:
            yield
        finally:
            stack.remove(entries)
            if not stack:
                del self._staged[k]

    def unsent(self, key: SessionKey) -> int:
        """How many entries of the session failed to reach the store and wait to be sent again."""
        return len(self._unsent.get(_key(key), ()))

    async def load_checked(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The stored transcript with the entries of it this guard still has to send, or ``None`` when the store
        has none, cannot be reached or did not answer in time (logged: the turn then goes on from this machine's
        copy or replays the history).

        Unsent entries are sent first: the store may take them now.
        """
        k = _key(key)
        if self._unsent.get(k):
            with contextlib.suppress(Exception):  # still unsent: they are added to what is read below
                await self.append(key, [])
        try:
            stored = await self.load(key)
        except Exception as error:
            logger.warning(
                "session store: session %s could not be loaded (%s); the turn goes on without the stored copy",
                key["session_id"],
                _describe(error),
            )
            return None
        backlog = self._unsent.get(k)
        if stored and backlog:
            return list(_merged(_merged(OrderedDict(), stored), list(backlog.values())).values())
        return stored

    # --- internals -------------------------------------------------------------------------------------------

    def _stuck_here(self) -> asyncio.Future[Any] | None:
        """The call that timed out and has not ended, if it runs on this event loop (one of a loop that is gone,
        such as an earlier ``run_sync()``'s, never ends: it is forgotten)."""
        stuck = self._stuck
        if stuck is not None and (stuck.done() or stuck.get_loop() is not asyncio.get_running_loop()):
            self._stuck = stuck = None
        return stuck

    async def _bounded(self, call: Coroutine[Any, Any, T], what: str) -> T:
        stuck = self._stuck_here()
        if stuck is not None:
            if not self._graced:  # the first call after a timeout gives the store a moment to come back
                self._graced = True
                await asyncio.wait({stuck}, timeout=min(STUCK_GRACE_SECONDS, self.timeout))
            if not stuck.done():
                call.close()
                raise StoreUnavailableError(f"{self.store!r}: not asked while a call that timed out has not ended")
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout)
        except BaseException:
            task.cancel()
            raise
        if done:
            return task.result()
        # Left to end by itself (a thread cannot be stopped; a database call may still land), within a bound.
        self._stuck, self._graced = task, False
        task.add_done_callback(_forget_outcome)
        give_up = asyncio.get_running_loop().call_later(STUCK_CALL_SECONDS, task.cancel)
        task.add_done_callback(lambda _: give_up.cancel())
        raise TimeoutError(f"{self.store!r}: {what}() took longer than {self.timeout:g} s")

    async def aclose(self) -> None:
        """Write the entries failed appends left unsent (unless the store is stuck in a call that timed out), then
        stop such a call."""
        if self._stuck_here() is None:
            await self._flush_unsent()
        stuck, self._stuck = self._stuck_here(), None
        if stuck is not None:
            stuck.cancel()
            await asyncio.wait({stuck})

    async def _flush_unsent(self) -> None:
        for project_key, session_id, subpath in list(self._unsent):
            key: SessionKey = {"project_key": project_key, "session_id": session_id}
            if subpath:
                key["subpath"] = subpath
            try:
                await self.append(key, [])
            except Exception as error:
                logger.warning(
                    "session store: the entries of %d session(s) that failed to reach it are given up (%s: %s); "
                    "other workers replay those conversations instead of resuming them",
                    len(self._unsent),
                    type(error).__name__,
                    error,
                )
                self._unsent.clear()
                return

    def _keep_unsent(self, k: _KeyTuple, entries: list[SessionStoreEntry]) -> None:
        backlog = self._unsent.pop(k, None) or OrderedDict()
        backlog = _merged(backlog, entries)
        if len(backlog) > MAX_UNSENT_ENTRIES:
            logger.warning(
                "session store: more than %d entries of session %s failed to reach it; they are given up (other "
                "workers replay the conversation instead of resuming it)",
                MAX_UNSENT_ENTRIES,
                k[1],
            )
            return
        self._unsent[k] = backlog
        while len(self._unsent) > MAX_UNSENT_SESSIONS:
            given_up, _ = self._unsent.popitem(last=False)
            logger.warning("session store: the unsent entries of session %s are given up", given_up[1])


def _key(key: SessionKey | SessionListSubkeysKey) -> _KeyTuple:
    raw = cast("dict[str, Any]", key)
    return (str(raw.get("project_key")), str(raw.get("session_id")), str(raw.get("subpath") or ""))


def _merged(
    backlog: OrderedDict[str, SessionStoreEntry], entries: list[SessionStoreEntry]
) -> OrderedDict[str, SessionStoreEntry]:
    """``backlog`` followed by the entries of ``entries`` it lacks (by ``uuid``, or by content without one)."""
    merged = OrderedDict(backlog)
    for entry in entries:
        uuid = cast("dict[str, Any]", entry).get("uuid")
        identity = uuid if isinstance(uuid, str) and uuid else json.dumps(entry, sort_keys=True, default=str)
        merged.setdefault(identity, entry)
    return merged


def _forget_outcome(task: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of a call nobody waits for any more (it is not an error left unseen)."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("session store: a call that had timed out failed later: %s", task.exception())


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
