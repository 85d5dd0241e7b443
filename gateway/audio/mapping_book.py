"""Each workspace's voice mappings by name, held in memory for the speech path.

A `voice` in a speech request may name a workspace mapping, which wins over every other
meaning of the name, so every request must look. Asking the store each time put a
SQLite round trip (a worker-thread hop, behind the one writer's queue) before every first
audio byte; the book answers from memory instead. A workspace is loaded on first use
and reloaded once its entry is `TTL_S` old, so a change made by another worker of the
same node reaches this one within that time; a change made here (`changed`) is seen at
once. A load that raced with a change is used for its request but not kept, so the book
never keeps an answer older than the change.

One load per workspace at a time: when an entry goes stale under load (32 requests at
once, say), the first request reloads it and the others answer from the stale entry
meanwhile instead of each queueing its own store read (a worker-thread hop) behind the
writer: at concurrency 32, one expiry cost 8 store reads, now 1. So an entry is at most
`TTL_S` plus one load old. A request with no entry at all waits for the load in flight,
then loads itself if that one was not kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import trio

from store import voice_mappings
from store.db import Database
from store.voice_mappings import VoiceMappingRecord

TTL_S = 5.0

Names = Mapping[str, VoiceMappingRecord]  # mapping name -> the mapping


@attrs.frozen
class _Entry:
    names: Names
    loaded_at: float


@attrs.define
class VoiceMappingBook:
    """Workspace id -> its mappings by name (see the module docstring)."""

    _entries: dict[str, _Entry] = attrs.field(factory=dict)
    _changes: dict[str, int] = attrs.field(factory=dict)
    _loading: dict[str, trio.Event] = attrs.field(factory=dict)  # workspace -> load in flight

    async def named(self, db: Database, workspace_id: str, name: str) -> Mapping[str, str] | None:
        """The provider voices of the workspace's mapping called `name`, if there is one
        (cancellation: as `Database.run`)."""
        record = await self.record(db, workspace_id, name)
        return record.mappings if record is not None else None

    async def record(self, db: Database, workspace_id: str, name: str) -> VoiceMappingRecord | None:
        """The workspace's mapping called `name`, if there is one.

        Answers from memory when the workspace's entry is fresh; otherwise reads the
        workspace's mappings from the store (cancellation: as `Database.run`)."""
        entry = self._entries.get(workspace_id)
        if entry is None:
            entry = await self._load_shared(db, workspace_id)
        elif trio.current_time() - entry.loaded_at >= TTL_S and workspace_id not in self._loading:
            # Stale: reload. (Stale with a reload under way: answer from it meanwhile.)
            entry = await self._load_shared(db, workspace_id)
        return entry.names.get(name)

    def changed(self, workspace_id: str) -> None:
        """A mapping of the workspace was created, changed or deleted here: forget it."""
        self._entries.pop(workspace_id, None)
        self._changes[workspace_id] = self._changes.get(workspace_id, 0) + 1

    async def _load_shared(self, db: Database, workspace_id: str) -> _Entry:
        """The workspace's entry, loaded once for every request that needs it now: wait
        for a load in flight, else (or when that one was not kept) load."""
        loading = self._loading.get(workspace_id)
        if loading is not None:
            await loading.wait()
            entry = self._entries.get(workspace_id)
            if entry is not None:
                return entry
        done = self._loading[workspace_id] = trio.Event()
        try:
            return await self._load(db, workspace_id)
        finally:
            if self._loading.get(workspace_id) is done:
                del self._loading[workspace_id]
            done.set()

    async def _load(self, db: Database, workspace_id: str) -> _Entry:
        before = self._changes.get(workspace_id, 0)
        loaded_at = trio.current_time()
        records = await db.run(lambda d: voice_mappings.list_for_workspace(d, workspace_id))
        entry = _Entry({record.name: record for record in records}, loaded_at)
        if self._changes.get(workspace_id, 0) == before:
            self._entries[workspace_id] = entry
        return entry
