"""The workspace's chunk vectors as numpy matrices, cached, for exact similarity search.

One matrix per embedding space (model and provider: vectors of different models are not
comparable), rows normalised to unit length so a matrix product gives cosine similarity.
A workspace's snapshot is built once from the store (a thread: decoding 100,000 vectors
takes a moment) and reused until a document of the workspace changes (`invalidate`).
A build that raced with an invalidation is returned but not cached, so a search never
keeps seeing an erased document. A newly completed document is appended to the cached
snapshot (`add`) rather than rebuilding it: at 100,000 chunks a rebuild reads and decodes
hundreds of megabytes, which every ingestion would otherwise impose on the next search. An
erasure drops the snapshot (no copy of an erased document's vectors stays, even in memory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import cache

import attrs
import numpy as np
import numpy.typing as npt
import trio

from store.documents import VectorRows

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


# Above this many rows a space is searched in two stages: a random projection to
# `SKETCH_DIMS` components preselects `PRESELECT` x k candidates (reading a quarter of the
# bytes, for 1,024-wide vectors), which are then scored exactly. An exact product over
# 100,000 x 1,024 floats reads 400 MB and is bound by memory bandwidth, well over 20 ms.
# The projection keeps inner products within about 1/sqrt(SKETCH_DIMS) (Johnson-
# Lindenstrauss), so the true best rows are among the candidates unless many rows lie
# within that margin of them, where the BM25 ranking and the fusion decide anyway.
EXACT_ROWS = 20_000
SKETCH_DIMS = 256
PRESELECT = 8


@cache
def _projection(width: int) -> Floats:
    """A fixed Gaussian projection for a vector width (the same for every snapshot; pure,
    so computed once per width)."""
    rng = np.random.default_rng(width)
    projection: Floats = (rng.standard_normal((width, SKETCH_DIMS)) / np.sqrt(SKETCH_DIMS)).astype(
        np.float32
    )
    return projection


@attrs.frozen(eq=False)
class Space:
    """The chunks embedded by one model at one provider (`key` = `model@provider`)."""

    key: str
    rowids: Ints
    documents: Ints  # index into `Snapshot.document_ids`
    matrix: Floats
    sketch: Floats | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        if self.sketch is None and len(self.rowids) > EXACT_ROWS:
            sketch = self.matrix @ _projection(self.matrix.shape[1])
            object.__setattr__(self, "sketch", np.ascontiguousarray(sketch))


@attrs.frozen(eq=False)
class Snapshot:
    document_ids: tuple[str, ...]
    spaces: dict[str, Space]

    def document_mask(self, space: Space, allowed: frozenset[str]) -> npt.NDArray[np.bool_]:
        wanted = np.array([d in allowed for d in self.document_ids], dtype=np.bool_)
        return wanted[space.documents] if len(wanted) else np.zeros(0, dtype=np.bool_)


def build(rows: VectorRows) -> Snapshot:
    """Pure: the stored rows as one matrix per embedding space."""
    document_ids = tuple(dict.fromkeys(rows.document_ids))
    position = {d: i for i, d in enumerate(document_ids)}
    by_space: dict[str, list[int]] = {}
    for i, key in enumerate(rows.models):
        by_space.setdefault(key, []).append(i)
    spaces = {}
    for key, members in by_space.items():
        matrix = np.frombuffer(b"".join(rows.vectors[i] for i in members), dtype="<f4")
        matrix = matrix.reshape(len(members), -1).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms == 0, 1, norms)
        spaces[key] = Space(
            key,
            np.array([rows.rowids[i] for i in members], dtype=np.int64),
            np.array([position[rows.document_ids[i]] for i in members], dtype=np.int64),
            matrix,
        )
    return Snapshot(document_ids, spaces)


def merge(first: Snapshot, second: Snapshot) -> Snapshot:
    """Pure: `second`'s rows appended to `first`'s (their documents are disjoint)."""
    offset = len(first.document_ids)
    spaces = dict(first.spaces)
    for key, extra in second.spaces.items():
        shifted = Space(key, extra.rowids, extra.documents + offset, extra.matrix)
        old = spaces.get(key)
        if old is not None and old.matrix.shape[1] != extra.matrix.shape[1]:
            continue  # a model cannot change width; never mix widths in one matrix
        spaces[key] = shifted if old is None else _joined(old, shifted)
    return Snapshot(first.document_ids + second.document_ids, spaces)


def _joined(a: Space, b: Space) -> Space:
    return Space(
        a.key,
        np.concatenate([a.rowids, b.rowids]),
        np.concatenate([a.documents, b.documents]),
        np.vstack([a.matrix, b.matrix]),
    )


def nearest(
    space: Space, query: Sequence[float], mask: npt.NDArray[np.bool_], k: int
) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the `k` rows most similar to `query` among `mask`:
    exact for small spaces, preselected through the sketch for large ones (see
    `EXACT_ROWS`)."""
    vector = np.asarray(query, dtype=np.float32)
    if vector.shape[0] != space.matrix.shape[1]:
        return []
    vector /= float(np.linalg.norm(vector)) or 1.0
    k = min(k, int(mask.sum()))
    if k <= 0:
        return []
    if space.sketch is None:
        candidates = np.flatnonzero(mask)
        scores = (space.matrix @ vector)[candidates]
    else:
        rough = space.sketch @ (vector @ _projection(len(vector)))
        rough = np.where(mask, rough, -np.inf)
        wanted = min(PRESELECT * k, int(mask.sum()))
        candidates = np.argpartition(-rough, wanted - 1)[:wanted]
        scores = space.matrix[candidates] @ vector
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(int(space.rowids[candidates[i]]), float(scores[i])) for i in best]


@attrs.define(eq=False)
class VectorIndex:
    _cache: dict[str, Snapshot] = attrs.field(factory=dict)
    _versions: dict[str, int] = attrs.field(factory=dict)

    def invalidate(self, workspace_id: str) -> None:
        self._cache.pop(workspace_id, None)
        self._versions[workspace_id] = self._versions.get(workspace_id, 0) + 1

    async def add(self, workspace_id: str, load: Callable[[], Awaitable[VectorRows]]) -> None:
        """Append a newly completed document's rows (`load()`) to the cached snapshot; with
        none cached, only make sure a build already under way is not cached without them."""
        cached = self._cache.get(workspace_id)
        self.invalidate(workspace_id)
        if cached is None:
            return
        version = self._versions[workspace_id]
        rows = await load()
        merged = await trio.to_thread.run_sync(lambda: merge(cached, build(rows)))
        if self._versions.get(workspace_id) == version:
            self._cache[workspace_id] = merged

    async def snapshot(
        self, workspace_id: str, load: Callable[[], Awaitable[VectorRows]]
    ) -> Snapshot:
        """The workspace's cached snapshot, built from `load()` when there is none."""
        cached = self._cache.get(workspace_id)
        if cached is not None:
            return cached
        version = self._versions.get(workspace_id, 0)
        rows = await load()
        snapshot = await trio.to_thread.run_sync(build, rows)
        if self._versions.get(workspace_id, 0) == version:
            self._cache[workspace_id] = snapshot
        return snapshot
