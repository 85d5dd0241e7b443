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
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO

import attrs


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


@attrs.frozen
class BlobStore:
    root: Path

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
        and its row's commit would look orphaned.
        """
        temporary = self.clear_temporary()
        orphans = [digest for digest in self.blobs() if digest not in in_use]
        for digest in orphans:
            self.shred(digest)  # it may be an erasure's, cut short between commit and shred
        return temporary, len(orphans)

    def clear_temporary(self) -> int:
        """Remove uploads a crash left half-written; returns how many. Call at start-up."""
        if not self._tmp.exists():
            return 0
        leftovers = [p for p in self._tmp.iterdir() if p.is_file()]
        for path in leftovers:
            path.unlink(missing_ok=True)
        return len(leftovers)


def _fsync_directory(path: Path) -> None:
    """Make a rename inside `path` durable (the entry lives in the directory's data)."""
    handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
