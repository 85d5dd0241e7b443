"""The in-memory vector index: exact cosine ranking, owner masks, incremental updates, the
clustered (IVF) form of large spaces, and the per-workspace cache."""

from __future__ import annotations

import numpy as np
import trio
import trio.testing

from gateway.kernels.vectors import index as vector_index
from gateway.kernels.vectors.cache import Snapshot, VectorCache, with_rows, without
from gateway.kernels.vectors.index import EXACT_ROWS, nearest
from store.vector_rows import VectorRows


def rows(start: int, owners: list[str], vectors: list[list[float]], key: str = "m@p") -> VectorRows:
    return VectorRows(
        list(range(start, start + len(vectors))),
        owners,
        [np.asarray(v, dtype="<f4").tobytes() for v in vectors],
        [key] * len(vectors),
    )


BASE = rows(1, ["a", "a", "b"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
EXTRA = rows(4, ["c"], [[0.9, 0.1, 0]])


def test_nearest_ranks_by_cosine_within_the_owners_asked_for() -> None:
    snapshot = with_rows(Snapshot(), BASE)
    space = snapshot.spaces["m@p"]
    everything = snapshot.wanted({"a", "b"})
    assert [r for r, _ in nearest(space, [2, 0.1, 0], everything, 2)] == [1, 2]
    assert nearest(space, [1, 0, 0], snapshot.wanted({"b"}), 5) == [(3, 0.0)]
    assert nearest(space, [1, 0], everything, 5) == []  # another width: not this space
    assert nearest(space, [1, 0, 0], snapshot.wanted({"unknown"}), 5) == []


def test_adding_and_removing_equal_a_load_of_the_remaining_rows() -> None:
    grown = with_rows(with_rows(Snapshot(), BASE), EXTRA)
    whole = with_rows(
        Snapshot(),
        rows(1, ["a", "a", "b", "c"], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.9, 0.1, 0]]),
    )
    for snapshot in (grown, whole):
        space = snapshot.spaces["m@p"]
        found = nearest(space, [1, 0.05, 0], snapshot.wanted({"a", "b", "c"}), 4)
        assert [r for r, _ in found] == [1, 4, 2, 3]
    erased = without(grown, "a")
    space = erased.spaces["m@p"]
    assert "a" not in erased.codes and space.rows == 2
    assert all(1 not in c.rowids and 2 not in c.rowids for c in space.cells)
    assert [r for r, _ in nearest(space, [1, 0, 0], erased.wanted({"a", "b", "c"}), 4)] == [4, 3]


def _clustered_rows(count: int, width: int, seed: int) -> tuple[np.ndarray, VectorRows]:
    """Rows around 300 directions, as embeddings of related texts are."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((300, width)).astype(np.float32)
    matrix = centres[rng.integers(0, 300, count)] + 0.5 * rng.standard_normal((count, width))
    matrix = matrix.astype("<f4")
    owners = [f"d{i // 100}" for i in range(count)]
    return matrix, VectorRows(
        list(range(count)), owners, [r.tobytes() for r in matrix], ["k"] * count
    )


def test_a_large_space_is_clustered_and_finds_the_true_nearest_rows() -> None:
    count = EXACT_ROWS + 10_000
    matrix, stored = _clustered_rows(count, 48, 5)
    snapshot = with_rows(Snapshot(), stored)
    space = snapshot.spaces["k"]
    assert space.centroids is not None and len(space.cells) == round(count**0.5)
    assert sum(len(c.rowids) for c in space.cells) == count
    unit = vector_index.unit_rows(matrix)
    every = snapshot.wanted(stored.owners)
    recall = []
    for probe in range(0, 2_000, 100):
        found = nearest(space, matrix[probe].tolist(), every, 100)
        assert found[0][0] == probe and abs(found[0][1] - 1.0) < 1e-5
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        truth = set(np.argsort(-(unit @ unit[probe]))[:10].tolist())
        recall.append(len(truth & {rowid for rowid, _ in found[:10]}) / 10)
    assert np.mean(recall) >= 0.9
    # Few wanted rows: scored exactly, wherever they lie.
    two = snapshot.wanted({"d7", "d250"})
    found = nearest(space, matrix[0].tolist(), two, 300)
    assert sorted(r for r, _ in found) == list(range(700, 800)) + list(range(25_000, 25_100))
    exact = sorted(range(700, 800), key=lambda r: -float(unit[r] @ unit[0]))[:5]
    assert [r for r, _ in nearest(space, matrix[0].tolist(), snapshot.wanted({"d7"}), 5)] == exact


def test_a_clustered_space_adds_and_erases_incrementally() -> None:
    count = EXACT_ROWS + 1_000
    matrix, stored = _clustered_rows(count + 100, 32, 9)
    first = VectorRows(
        stored.rowids[:count], stored.owners[:count], stored.vectors[:count], stored.spaces[:count]
    )
    last = VectorRows(
        stored.rowids[count:], ["new"] * 100, stored.vectors[count:], stored.spaces[count:]
    )
    snapshot = with_rows(Snapshot(), first)
    grown = with_rows(snapshot, last)
    space = grown.spaces["k"]
    assert space.centroids is snapshot.spaces["k"].centroids  # no retraining
    touched = [a is not b for a, b in zip(snapshot.spaces["k"].cells, space.cells, strict=True)]
    assert 0 < sum(touched) < len(touched)  # only the cells the new rows joined were copied
    found = nearest(space, matrix[count + 3].tolist(), grown.wanted({"new"}), 1)
    assert found[0][0] == count + 3
    erased = without(grown, "new").spaces["k"]
    assert erased.rows == count
    assert not any((c.rowids >= count).any() for c in erased.cells)


def test_a_small_space_that_outgrows_the_exact_limit_is_clustered() -> None:
    _, stored = _clustered_rows(EXACT_ROWS + 50, 16, 3)
    cut = EXACT_ROWS - 10
    small = with_rows(
        Snapshot(),
        VectorRows(
            stored.rowids[:cut], stored.owners[:cut], stored.vectors[:cut], stored.spaces[:cut]
        ),
    )
    assert small.spaces["k"].centroids is None
    rest = VectorRows(stored.rowids[cut:], ["z"] * 60, stored.vectors[cut:], stored.spaces[cut:])
    assert with_rows(small, rest).spaces["k"].centroids is not None


async def test_the_cache_updates_in_place_and_never_keeps_a_stale_load() -> None:
    cache = VectorCache()
    loads = 0

    async def load() -> VectorRows:
        nonlocal loads
        loads += 1
        return BASE

    first = await cache.snapshot("ws", load)
    assert await cache.snapshot("ws", load) is first and loads == 1

    async def extra() -> VectorRows:
        return EXTRA

    await cache.add("ws", "c", extra)
    await cache.add("ws", "c", extra)  # processed again: replaces, never doubles
    grown = await cache.snapshot("ws", load)
    assert loads == 1 and set(grown.codes) == {"a", "b", "c"} and grown.spaces["m@p"].rows == 4
    await cache.remove("ws", "a")
    erased = await cache.snapshot("ws", load)
    assert loads == 1 and set(erased.codes) == {"b", "c"} and erased.spaces["m@p"].rows == 2
    # A load under way when a document changes is returned but not cached.
    fresh = VectorCache()
    release = trio.Event()

    async def slow() -> VectorRows:
        await release.wait()
        return BASE

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fresh.snapshot, "ws", slow)
        await trio.testing.wait_all_tasks_blocked()
        await fresh.remove("ws", "a")
        release.set()
    assert fresh.cached("ws") is None
