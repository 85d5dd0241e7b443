"""The usage writer's sketch update stores exactly what encoding dense counts would."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from store import latency_sketch, sketch_blob
from store.db import DB_FILENAME, open_database


def _dense_update(blob: bytes | None, slots: list[int]) -> bytes | None:
    counts = latency_sketch.empty()
    if blob is not None:
        latency_sketch.add_blob(counts, blob)
    for slot in slots:
        counts[slot] += 1
    return latency_sketch.encode(counts)


def test_adding_slots_matches_the_dense_encoding_batch_after_batch() -> None:
    rng = random.Random(7)
    blob: bytes | None = None
    for _ in range(200):
        latencies = [rng.lognormvariate(3, 2) for _ in range(rng.randint(0, 20))]
        latencies += [0.0] * rng.randint(0, 1)
        slots = [sketch_blob.slot_of(ms) for ms in latencies]
        expected = _dense_update(blob, slots)
        blob = sketch_blob.add_slots(blob, slots)
        assert blob == expected


def test_a_slot_below_or_above_the_stored_range_widens_it() -> None:
    middle = sketch_blob.add_slots(None, [500, 500])
    assert middle is not None
    wider = sketch_blob.add_slots(middle, [3, sketch_blob.SLOTS - 1])
    counts = latency_sketch.merge([wider])  # type: ignore[list-item]
    assert (counts[3], counts[500], counts[sketch_blob.SLOTS - 1]) == (1, 2, 1)
    assert sum(counts) == 4


def test_the_usage_writer_child_imports_neither_numpy_nor_sqlite_utils(tmp_path: Path) -> None:
    """Run as a program on a gateway database (nothing on its input: it opens its
    connection and ends), it loads no numpy and no sqlite-utils (with its dateutil, click
    and pluggy, ~6 MiB: `store.sqlite_handle`): the child's memory is the point
    (`store.sketch_blob`'s docstring)."""
    open_database(tmp_path).close()
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['usage_child', {str(tmp_path / DB_FILENAME)!r}]\n"
        "try:\n"
        "    runpy.run_module('gateway.workers.usage_child', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [name for name in ('numpy', 'sqlite_utils') if sys.modules.get(name)]\n"
        f"open({str(tmp_path / 'loaded')!r}, 'w').write(repr(loaded))"
    )
    done = subprocess.run([sys.executable, "-c", code], input="", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "loaded").read_text() == "[]"
