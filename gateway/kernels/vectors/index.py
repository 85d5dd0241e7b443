"""An in-memory vector index over stored embeddings: exact when small, clustered when large.

SQLite holds the vectors (float32 blobs, erased with their owner); this is the searchable
copy in memory, shared by the data-document and files families. Measured on the 2-core
machine (README "Data documents"): an exact product over 100,000 x 1,024 float32 reads
400 MB per query, 21 ms idle and several times that under load, so above `EXACT_ROWS` a
space is an inverted-file index (IVF): rows are grouped into about sqrt(n) cells around
spherical k-means centroids, and a query scores only the rows of the cells whose centroids
are nearest to it (`PROBE_FRACTION` of the cells, about 6% of the bytes). HNSW libraries
(hnswlib, usearch) answered in under a millisecond but took minutes to build over
100,000 x 1,024 here (usearch f16: 439 s), and faiss-cpu's IVF built in 20 s and answered in
13-29 ms under load (its OpenMP threads contend with the machine's other work); this
numpy IVF builds in seconds and scans a few megabytes per query.

Everything here is pure and immutable: an update returns a new `Space` that shares the
cells it did not touch, so a search in a thread keeps reading a consistent snapshot, and
an erased owner's rows are gone from every cell of the new space (its old cells are freed
with the old space). Adding rows assigns them to their nearest centroid (no retraining);
removing an owner rewrites only the cells that held its rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

EXACT_ROWS = 20_000  # up to here one cell, scored exactly (about 4 ms idle at 1,024 wide)
PROBE_FRACTION = 1 / 16
SAMPLE_PER_CELL = 16  # k-means trains on this many rows per cell
ITERATIONS = 8
BLOCK = 8192  # rows assigned to centroids at a time (bounds the score matrix's memory)


@attrs.frozen(eq=False)
class Cell:
    """Rows near one centroid: their keys (store rowids), owner codes and unit vectors."""

    rowids: Ints
    owners: Ints
    matrix: Floats


@attrs.frozen(eq=False)
class Space:
    """The vectors of one embedding space; `centroids` None means one exact cell."""

    width: int
    cells: tuple[Cell, ...]
    centroids: Floats | None
    counts: Mapping[int, int]  # rows per owner code

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def unit_rows(matrix: Floats) -> Floats:
    """Rows scaled to length 1 (a zero row stays zero), so a product is a cosine."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled: Floats = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
    return scaled


def _counts(owners: Ints, base: Mapping[int, int] | None = None) -> dict[int, int]:
    counts = dict(base or {})
    codes, numbers = np.unique(owners, return_counts=True)
    for code, number in zip(codes.tolist(), numbers.tolist(), strict=True):
        counts[code] = counts.get(code, 0) + number
    return {c: n for c, n in counts.items() if n > 0}


def space_of(rowids: Ints, owners: Ints, matrix: Floats) -> Space:
    """A space over unit rows: exact up to `EXACT_ROWS`, clustered above."""
    width = matrix.shape[1]
    if len(rowids) <= EXACT_ROWS:
        return Space(width, (Cell(rowids, owners, matrix),), None, _counts(owners))
    centroids = _train(matrix, round(math.sqrt(len(rowids))))
    cells = _grouped(rowids, owners, matrix, _assign(matrix, centroids), len(centroids))
    return Space(width, cells, centroids, _counts(owners))


def _train(matrix: Floats, count: int) -> Floats:
    """Spherical k-means on a sample: `count` unit centroids (deterministic per size)."""
    rng = np.random.default_rng(len(matrix))
    size = min(len(matrix), count * SAMPLE_PER_CELL)
    sample = matrix[np.sort(rng.choice(len(matrix), size, replace=False))]
    centroids = sample[rng.choice(size, count, replace=False)].copy()
    for _ in range(ITERATIONS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        filled = np.bincount(nearest, minlength=count) > 0
        centroids[filled] = unit_rows(sums[filled])  # an empty cell keeps its centroid
    return centroids


def _assign(matrix: Floats, centroids: Floats) -> Ints:
    parts = [
        np.argmax(matrix[i : i + BLOCK] @ centroids.T, axis=1) for i in range(0, len(matrix), BLOCK)
    ]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def _grouped(
    rowids: Ints, owners: Ints, matrix: Floats, cell: Ints, count: int
) -> tuple[Cell, ...]:
    order = np.argsort(cell, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(cell, minlength=count))])
    return tuple(
        Cell(rowids[order[a:b]], owners[order[a:b]], matrix[order[a:b]])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    )


def added(space: Space | None, rowids: Ints, owners: Ints, matrix: Floats) -> Space:
    """`space` with more unit rows (of its width); only the cells they join are copied. An
    exact space that outgrows `EXACT_ROWS` is clustered."""
    if space is None:
        return space_of(rowids, owners, matrix)
    if space.centroids is None:
        (old,) = space.cells
        if space.rows + len(rowids) > EXACT_ROWS:
            return space_of(
                np.concatenate([old.rowids, rowids]),
                np.concatenate([old.owners, owners]),
                np.vstack([old.matrix, matrix]),
            )
        cells: tuple[Cell, ...] = (_joined(old, Cell(rowids, owners, matrix)),)
    else:
        extra = _grouped(rowids, owners, matrix, _assign(matrix, space.centroids), len(space.cells))
        cells = tuple(
            _joined(old, new) if len(new.rowids) else old
            for old, new in zip(space.cells, extra, strict=True)
        )
    return Space(space.width, cells, space.centroids, _counts(owners, space.counts))


def _joined(a: Cell, b: Cell) -> Cell:
    return Cell(
        np.concatenate([a.rowids, b.rowids]),
        np.concatenate([a.owners, b.owners]),
        np.vstack([a.matrix, b.matrix]),
    )


def removed(space: Space, code: int) -> Space:
    """`space` without the rows of owner `code`: the cells that held them are rewritten,
    the others shared."""
    if code not in space.counts:
        return space
    cells = []
    for cell in space.cells:
        keep = cell.owners != code
        cells.append(
            cell if keep.all() else Cell(cell.rowids[keep], cell.owners[keep], cell.matrix[keep])
        )
    counts = {c: n for c, n in space.counts.items() if c != code}
    return Space(space.width, tuple(cells), space.centroids, counts)


def nearest(space: Space, query: Sequence[float], wanted: Bools, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of up to `k` rows most similar to `query` among the rows
    whose owner code is set in `wanted`, best first. Exact when the space or the wanted
    rows are few; otherwise the probed cells' rows (more cells when `wanted` excludes many
    rows, so that the share of wanted rows scored stays about `PROBE_FRACTION`)."""
    vector = np.asarray(query, dtype=np.float32)
    if vector.shape != (space.width,):
        return []
    vector /= float(np.linalg.norm(vector)) or 1.0
    allowed = sum(n for c, n in space.counts.items() if c < len(wanted) and wanted[c])
    k = min(k, allowed)
    if k <= 0:
        return []
    cells: Sequence[Cell] = space.cells
    if space.centroids is not None and allowed > EXACT_ROWS:
        probes = math.ceil(len(cells) * PROBE_FRACTION * space.rows / allowed)
        order = np.argsort(-(space.centroids @ vector))[: min(probes, len(cells))]
        cells = [space.cells[i] for i in order.tolist()]
    return _best(cells, vector, wanted, k)


def _best(cells: Sequence[Cell], vector: Floats, wanted: Bools, k: int) -> list[tuple[int, float]]:
    keys, scores = [], []
    for cell in cells:
        chosen = wanted[cell.owners]  # `wanted` covers every owner code of the space
        if chosen.all():
            keys.append(cell.rowids)
            scores.append(cell.matrix @ vector)
        elif chosen.any():
            keys.append(cell.rowids[chosen])
            scores.append(cell.matrix[chosen] @ vector)
    if not keys:
        return []
    rowids, found = np.concatenate(keys), np.concatenate(scores)
    k = min(k, len(found))
    best = np.argpartition(-found, k - 1)[:k]
    best = best[np.lexsort((rowids[best], -found[best]))]
    return [(int(rowids[i]), float(found[i])) for i in best]
