"""The content-addressed blob store on disk: uploads land here, named by their SHA-256.

An upload is written to a temporary name in `tmp/` while it streams in, hashed as it goes,
fsynced, then renamed to `<aa>/<sha256>` (same file system, so the rename is atomic) and
the directory fsynced, so the name survives a power loss too: a reader never sees half a
blob, and two uploads of the same bytes share one file. Whether a blob is still used is
decided by the rows that name it (store/files.py); the caller removes a blob once no row
does. A crash can leave two kinds of debris, both removed at start-up (`sweep`): a
half-written temporary file, and a whole blob no row names (killed between the rename and
the row's commit, or between an erasure's commit and the shredding: such a blob is
shredded, as the erasure would have). Every method here is
blocking: the gateway calls them through `trio.to_thread.run_sync`.

`BlobStorage` is the interface the families use; `BlobStore` implements it on a
directory: the node's own (the default, `<data_dir>`), or one every node mounts
(`GATEWAY_BLOB_DIR`, docs/postgresql.md) when several nodes share a PostgreSQL store. A
shared directory is `shared=True`: another node may be between an upload's rename and
its row's commit, or still writing a temporary file, at any moment, so the sweep then
removes only debris older than `SHARED_GRACE_S` (longer than any upload may take).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO, Protocol

import attrs

# On a directory several nodes share, debris younger than this may be another node's
# upload in progress (its temporary file, or its blob before the row commits).
SHARED_GRACE_S = 3600.0


@attrs.define(eq=False)
class BlobWriter:
    """One upload being written: bytes in, a digest out on `commit`, nothing left on `discard`."""

    path: Path
    handle: BinaryIO
    size: int = 0
    _hash: hashlib._Hash = attrs.field(factory=hashlib.sha256)

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self._hash.update(data)
        self.size += len(data)

    def head(self, count: int) -> bytes:
        """The first `count` bytes written so far (for type detection by magic bytes)."""
        self.handle.flush()
        with self.path.open("rb") as handle:
            return handle.read(count)

    def tail(self, count: int) -> bytes:
        self.handle.flush()
        with self.path.open("rb") as handle:
            handle.seek(max(0, self.size - count))
            return handle.read(count)

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()


class BlobStorage(Protocol):
    """Content-addressed blobs: what the files, documents and exports families use."""

    def path_of(self, sha256: str) -> Path: ...

    def open_writer(self) -> BlobWriter: ...

    def commit(self, writer: BlobWriter) -> str: ...

    def discard(self, writer: BlobWriter) -> None: ...

    def remove(self, sha256: str) -> None: ...

    def shred(self, sha256: str) -> None: ...

    def exists(self, sha256: str) -> bool: ...

    def blobs(self) -> list[str]: ...

    def sweep(self, in_use: Collection[str]) -> tuple[int, int]: ...

    def clear_temporary(self) -> int: ...


@attrs.frozen
class BlobStore:
    """`BlobStorage` on a directory (see the module docstring for `shared`)."""

    root: Path
    shared: bool = False

    @property
    def _tmp(self) -> Path:
        return self.root / "tmp"

    def path_of(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return self.root / sha256[:2] / sha256

    def open_writer(self) -> BlobWriter:
        self._tmp.mkdir(parents=True, exist_ok=True)
        path = self._tmp / ("upload-" + secrets.token_hex(12))
        return BlobWriter(path, path.open("xb"))

    def commit(self, writer: BlobWriter) -> str:
        """Fsync and move the upload to its content address; returns the digest."""
        writer.handle.flush()
        os.fsync(writer.handle.fileno())
        writer.handle.close()
        digest = writer.digest
        final = self.path_of(digest)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(writer.path, final)
        _fsync_directory(final.parent)
        return digest

    def discard(self, writer: BlobWriter) -> None:
        """Drop an upload that failed: the temporary file goes, whatever state it was in."""
        writer.handle.close()
        writer.path.unlink(missing_ok=True)

    def remove(self, sha256: str) -> None:
        self.path_of(sha256).unlink(missing_ok=True)

    def shred(self, sha256: str) -> None:
        """Overwrite the blob's bytes with zeros on disk (fsynced), then remove it: erasure,
        where a plain unlink would leave the content in the freed blocks of the file."""
        path = self.path_of(sha256)
        try:
            handle = path.open("r+b")
        except FileNotFoundError:
            return
        with handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(0)
            block = b"\0" * (1024 * 1024)
            for start in range(0, size, len(block)):
                handle.write(block[: min(len(block), size - start)])
            handle.flush()
            os.fsync(handle.fileno())
        path.unlink(missing_ok=True)

    def exists(self, sha256: str) -> bool:
        return self.path_of(sha256).is_file()

    def stored(self) -> list[Path]:
        """Every file under the store, temporary ones included (tests check nothing leaks)."""
        if not self.root.exists():
            return []
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    def blobs(self) -> list[str]:
        """The digests of every committed blob (temporary files excluded)."""
        if not self.root.exists():
            return []
        return sorted(
            p.name for p in self.root.glob("??/*") if p.is_file() and p.name[:2] == p.parent.name
        )

    def sweep(self, in_use: Collection[str]) -> tuple[int, int]:
        """Remove what a crash left behind: half-written uploads, and blobs whose digest
        is not `in_use` (named by no row). Returns (temporary files, orphan blobs) removed.

        Call it at start-up, before any upload can run: an upload between its rename
        and its row's commit would look orphaned. On a shared directory other nodes'
        uploads run at any time: only what is older than `SHARED_GRACE_S` goes.
        """
        temporary = self.clear_temporary()
        orphans = [
            digest
            for digest in self.blobs()
            if digest not in in_use and self._settled(self.path_of(digest))
        ]
        for digest in orphans:
            self.shred(digest)  # it may be an erasure's, cut short between commit and shred
        return temporary, len(orphans)

    def clear_temporary(self) -> int:
        """Remove uploads a crash left half-written; returns how many. Call at start-up.
        On a shared directory, only those no one has written for `SHARED_GRACE_S`."""
        if not self._tmp.exists():
            return 0
        leftovers = [p for p in self._tmp.iterdir() if p.is_file() and self._settled(p)]
        for path in leftovers:
            path.unlink(missing_ok=True)
        return len(leftovers)

    def _settled(self, path: Path) -> bool:
        """Whether `path` can no longer be an upload in progress (see `shared`)."""
        if not self.shared:
            return True
        try:
            return path.stat().st_mtime < time.time() - SHARED_GRACE_S
        except FileNotFoundError:
            return False


def _fsync_directory(path: Path) -> None:
    """Make a rename inside `path` durable (the entry lives in the directory's data)."""
    handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
