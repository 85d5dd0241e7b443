"""The vector index of data documents: exact cosine ranking, masks, merging, the cache."""

from __future__ import annotations

import numpy as np
import trio
import trio.testing

from gateway.documents.vectors import VectorIndex, build, merge, nearest
from store.documents import VectorRows


def rows(start: int, docs: list[str], vectors: list[list[float]], key: str = "m@p") -> VectorRows:
    return VectorRows(
        list(range(start, start + len(vectors))),
        docs,
        [np.asarray(v, dtype="<f4").tobytes() for v in vectors],
        [key] * len(vectors),
    )


BASE = rows(1, ["a", "a", "b"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
EXTRA = rows(4, ["c"], [[0.9, 0.1, 0]])


def test_nearest_ranks_by_cosine_within_the_mask() -> None:
    snapshot = build(BASE)
    space = snapshot.spaces["m@p"]
    everything = snapshot.document_mask(space, frozenset({"a", "b"}))
    assert [r for r, _ in nearest(space, [2, 0.1, 0], everything, 2)] == [1, 2]
    only_b = snapshot.document_mask(space, frozenset({"b"}))
    assert nearest(space, [1, 0, 0], only_b, 5) == [(3, 0.0)]
    assert nearest(space, [1, 0], everything, 5) == []  # another width: not this space


def test_merge_equals_a_build_of_all_rows() -> None:
    merged = merge(build(BASE), build(EXTRA))
    whole = build(rows(1, ["a", "a", "b", "c"], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.9, 0.1, 0]]))
    allowed = frozenset({"a", "b", "c"})
    for snapshot in (merged, whole):
        space = snapshot.spaces["m@p"]
        mask = snapshot.document_mask(space, allowed)
        assert [r for r, _ in nearest(space, [1, 0.05, 0], mask, 4)] == [1, 4, 2, 3]


async def test_the_cache_appends_and_never_keeps_a_stale_build() -> None:
    index = VectorIndex()
    loads = 0

    async def load() -> VectorRows:
        nonlocal loads
        loads += 1
        return BASE

    first = await index.snapshot("ws", load)
    assert await index.snapshot("ws", load) is first and loads == 1

    async def extra() -> VectorRows:
        return EXTRA

    await index.add("ws", extra)
    grown = await index.snapshot("ws", load)
    assert loads == 1 and grown.document_ids == ("a", "b", "c")
    index.invalidate("ws")
    # A build under way when a document completes is returned but not cached.
    release = trio.Event()

    async def slow() -> VectorRows:
        await release.wait()
        return BASE

    async with trio.open_nursery() as nursery:
        nursery.start_soon(index.snapshot, "ws", slow)
        await trio.testing.wait_all_tasks_blocked()
        await index.add("ws", extra)
        release.set()
    assert await index.snapshot("ws", load) is not None and loads == 2


def test_a_large_space_is_preselected_through_its_sketch_and_scored_exactly() -> None:
    from gateway.documents.vectors import EXACT_ROWS

    count = EXACT_ROWS + 5_000
    matrix = np.random.default_rng(5).standard_normal((count, 64)).astype("<f4")
    docs = [f"d{i // 100}" for i in range(count)]
    snapshot = build(
        VectorRows(list(range(count)), docs, [r.tobytes() for r in matrix], ["k"] * count)
    )
    space = snapshot.spaces["k"]
    assert space.sketch is not None
    every = snapshot.document_mask(space, frozenset(docs))
    exact = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)) @ (
        matrix[:20] / np.linalg.norm(matrix[:20], axis=1, keepdims=True)
    ).T
    for probe in range(20):
        # As search asks: 100 candidates, the true 10 nearest among them.
        found = nearest(space, matrix[probe].tolist(), every, 100)
        assert found[0][0] == probe and abs(found[0][1] - 1.0) < 1e-5
        truth = set(np.argsort(-exact[:, probe])[:10].tolist())
        assert len(truth & {rowid for rowid, _ in found}) >= 9
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    without = snapshot.document_mask(space, frozenset(docs) - {"d0"})
    assert all(rowid >= 100 for rowid, _ in nearest(space, matrix[0].tolist(), without, 5))
