"""The blob store: content addressing, atomic commit, nothing left by a discarded upload."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from store.blobs import SHARED_GRACE_S, BlobStore


def test_commit_names_the_blob_by_its_digest(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    writer = store.open_writer()
    writer.write(b"hello ")
    writer.write(b"blobs")
    assert writer.size == 11
    digest = store.commit(writer)
    assert digest == hashlib.sha256(b"hello blobs").hexdigest()
    assert store.path_of(digest).read_bytes() == b"hello blobs"
    assert store.stored() == [store.path_of(digest)]


def test_a_discarded_upload_leaves_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    writer = store.open_writer()
    writer.write(b"partial")
    store.discard(writer)
    assert store.stored() == []


def test_the_same_bytes_twice_are_one_blob(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    digests = set()
    for _ in range(2):
        writer = store.open_writer()
        writer.write(b"same")
        digests.add(store.commit(writer))
    assert len(digests) == 1
    assert len(store.stored()) == 1
    store.remove(digests.pop())
    assert store.stored() == []


def test_clear_temporary_removes_what_a_crash_left(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    crashed = store.open_writer()
    crashed.write(b"half")
    crashed.handle.close()  # the process died here
    assert store.clear_temporary() == 1
    assert store.stored() == []


def test_paths_only_for_digests(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BlobStore(tmp_path).path_of("../../etc/passwd")


def test_sweep_removes_half_written_uploads_and_orphan_blobs(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    kept, orphan = (_committed(store, data) for data in (b"named by a row", b"named by none"))
    half = store.open_writer()
    half.write(b"cut by a crash")
    half.handle.close()  # the process died: nobody discards it
    assert store.sweep({kept}) == (1, 1)
    assert store.blobs() == [kept]
    assert store.stored() == [store.path_of(kept)]
    assert not store.exists(orphan)


def _committed(store: BlobStore, data: bytes) -> str:
    writer = store.open_writer()
    writer.write(data)
    return store.commit(writer)


def _aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_shared_directory_keeps_another_nodes_upload_in_progress(tmp_path: Path) -> None:
    """Two nodes mount one directory. Node B's start-up sweep runs while node A is mid
    upload: A's temporary file and A's blob (renamed, its row not yet committed) stay;
    debris older than any upload may take goes."""
    node_a, node_b = BlobStore(tmp_path, shared=True), BlobStore(tmp_path, shared=True)
    uploading = node_a.open_writer()
    uploading.write(b"still arriving")
    renamed = node_a.open_writer()
    renamed.write(b"renamed, row not committed yet")
    fresh = node_a.commit(renamed)
    crashed = node_a.open_writer()
    crashed.write(b"a crash left this long ago")
    old = node_a.commit(crashed)
    _aged(node_a.path_of(old), SHARED_GRACE_S + 60)
    stale = node_a.open_writer()
    stale.write(b"half an upload from yesterday")
    stale.handle.close()
    _aged(stale.path, SHARED_GRACE_S + 60)

    assert node_b.sweep(in_use=set()) == (1, 1)
    assert node_a.exists(fresh) and not node_a.exists(old)
    assert uploading.path.exists() and not stale.path.exists()
    uploading.write(b" and done")
    assert node_a.exists(node_a.commit(uploading))


def test_a_local_directory_sweeps_everything_at_start_up(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    writer = store.open_writer()
    writer.write(b"orphan of a crash a moment ago")
    digest = store.commit(writer)
    assert store.sweep(in_use=set()) == (0, 1)
    assert not store.exists(digest)
