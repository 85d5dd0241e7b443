"""Per-workspace vector indexes in memory, loaded from the store and updated in place.

A workspace's `Snapshot` is loaded in bulk the first time it is searched (the rows read
from SQLite, decoded with one `frombuffer` per space and indexed in a thread) and then kept
up to date: an owner (document or file) whose vectors were stored is added, an erased one
removed, each in a thread and without rebuilding the rest (`gateway.kernels.vectors.index`).
Updates of one workspace run one at a time (a lock), and each bumps the workspace's version
so that a bulk load that raced with it is returned to its searcher but never cached: a
cached snapshot never holds an erased owner's vectors nor misses a new one's.

numpy (the `[files]` extra's, as are the families that search) is imported with the first
vectors: an empty cache costs nothing where those families are not installed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs
import trio

from store.vector_rows import VectorRows

if TYPE_CHECKING:
    from gateway.kernels.vectors.index import Bools, Space

Load = Callable[[], Awaitable[VectorRows]]


@attrs.frozen(eq=False)
class Snapshot:
    """One workspace's spaces (by key) and the code of each owner in their rows."""

    codes: Mapping[str, int] = attrs.field(factory=dict)
    spaces: Mapping[str, Space] = attrs.field(factory=dict)
    next_code: int = 0

    def wanted(self, owners: Iterable[str]) -> Bools:
        """The owner-code mask of `owners` (those unknown here are ignored)."""
        import numpy as np

        mask = np.zeros(self.next_code, np.bool_)
        codes = [self.codes[o] for o in owners if o in self.codes]
        mask[codes] = True
        return mask


def with_rows(snapshot: Snapshot, rows: VectorRows) -> Snapshot:
    """Pure: `snapshot` with `rows` added (owners not already in it)."""
    import numpy as np

    from gateway.kernels.vectors import index as vector_index

    codes = dict(snapshot.codes)
    next_code = snapshot.next_code
    for owner in rows.owners:
        if owner not in codes:
            codes[owner] = next_code
            next_code += 1
    by_space: dict[str, list[int]] = {}
    for i, key in enumerate(rows.spaces):
        by_space.setdefault(key, []).append(i)
    spaces = dict(snapshot.spaces)
    for key, members in by_space.items():
        matrix = np.frombuffer(b"".join(rows.vectors[i] for i in members), dtype="<f4")
        old = spaces.get(key)
        width = old.width if old is not None else len(rows.vectors[members[0]]) // 4
        if matrix.size != width * len(members):
            continue  # a model cannot change width; never mix widths in one space
        spaces[key] = vector_index.added(
            old,
            np.array([rows.rowids[i] for i in members], dtype=np.int64),
            np.array([codes[rows.owners[i]] for i in members], dtype=np.int64),
            vector_index.unit_rows(matrix.reshape(len(members), width)),
        )
    return Snapshot(codes, spaces, next_code)


def without(snapshot: Snapshot, owner: str) -> Snapshot:
    """Pure: `snapshot` with none of `owner`'s rows."""
    from gateway.kernels.vectors import index as vector_index

    code = snapshot.codes.get(owner)
    if code is None:
        return snapshot
    codes = {o: c for o, c in snapshot.codes.items() if o != owner}
    spaces = {k: vector_index.removed(s, code) for k, s in snapshot.spaces.items()}
    return Snapshot(codes, spaces, snapshot.next_code)


@attrs.define(eq=False)
class VectorCache:
    _cache: dict[str, Snapshot] = attrs.field(factory=dict)
    _versions: dict[str, int] = attrs.field(factory=dict)
    _locks: dict[str, trio.Lock] = attrs.field(factory=dict)
    # Told the workspace after its vectors changed here (`add`, `remove`, `forget`), so
    # that other processes drop their copy (`gateway.workers.store_events`, `drop`).
    on_change: Callable[[str], None] | None = None

    def cached(self, workspace_id: str) -> Snapshot | None:
        return self._cache.get(workspace_id)

    async def snapshot(self, workspace_id: str, load: Load) -> Snapshot:
        """The workspace's snapshot, loaded in bulk from `load()` when none is cached."""
        cached = self._cache.get(workspace_id)
        if cached is not None:
            return cached
        version = self._versions.get(workspace_id, 0)
        rows = await load()
        snapshot = await trio.to_thread.run_sync(with_rows, Snapshot(), rows)
        if self._versions.get(workspace_id, 0) == version:
            self._cache[workspace_id] = snapshot
        return snapshot

    async def add(self, workspace_id: str, owner: str, load: Load) -> None:
        """Put an owner's newly stored rows (`load()`) in place of any it had (a document or
        file processed again); with no snapshot cached, only keep a load under way from
        being cached without them."""
        await self._update(workspace_id, load, owner)
        self._changed(workspace_id)

    async def remove(self, workspace_id: str, owner: str) -> None:
        """Drop an erased owner's rows from the cached snapshot."""
        await self._update(workspace_id, None, owner)
        self._changed(workspace_id)

    def forget(self, workspace_id: str) -> None:
        """Drop an erased workspace's snapshot; a load under way is not cached either."""
        self.drop(workspace_id)
        self._changed(workspace_id)

    def drop(self, workspace_id: str) -> None:
        """Drop the workspace's snapshot (changed elsewhere: the next search loads it
        from the store); a load under way is not cached either. Not announced."""
        self._versions[workspace_id] = self._versions.get(workspace_id, 0) + 1
        self._cache.pop(workspace_id, None)

    def drop_all(self) -> None:
        for workspace_id in list(self._cache):
            self.drop(workspace_id)

    def _changed(self, workspace_id: str) -> None:
        if self.on_change is not None:
            self.on_change(workspace_id)

    async def _update(self, workspace_id: str, load: Load | None, owner: str) -> None:
        lock = self._locks.setdefault(workspace_id, trio.Lock())
        async with lock:
            self._versions[workspace_id] = self._versions.get(workspace_id, 0) + 1
            cached = self._cache.get(workspace_id)
            if cached is None:
                return
            if load is None:
                updated = await trio.to_thread.run_sync(without, cached, owner)
            else:
                rows = await load()
                updated = await trio.to_thread.run_sync(
                    lambda: with_rows(without(cached, owner), rows)
                )
            self._cache[workspace_id] = updated
