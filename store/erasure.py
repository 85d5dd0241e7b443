"""Erasure: the one way user content leaves the gateway's disk, for every family.

A plain DELETE leaves copies of the content in three places SQLite does not clear on its
own: the free space of the database file's pages, the old page images in the WAL, and
(for a blob) the disk blocks of an unlinked file. Every family that holds user content
(files with their extracted text, chunks, vectors and PII findings; data documents with
their chunks and full-text index; a workspace with all of those; stored responses) deletes
it through `erase`, which:

1. runs the family's `remove(db)` (its DELETEs, and the audit event) in one transaction.
   The connection has `secure_delete` on for its whole life (`store.connection.configure`):
   freed space is overwritten with zeros, including the space an UPDATE frees when it
   rewrites a row, which a per-erasure switch would miss (a file's results rewritten while
   it was processed, a document's chunks replaced by a second run);
2. after the commit, lets the family drop its in-memory copies (`forget`: a vector index);
3. checkpoints the WAL and truncates it to zero bytes, so the zeroed pages reach the
   database file and the old page images leave the WAL;
4. overwrites each blob no row names any more with zeros, fsyncs it and unlinks it
   (`BlobStore.shred`).

Steps 2-4 run after the commit even when the caller is cancelled (a client gone once the
transaction committed), shielded under a deadline: a committed erasure is always finished.

On PostgreSQL (docs/postgresql.md, "Erasure") step 1 is the same transaction without the
pragma, and step 3 is a `VACUUM` of the tables that hold user content
(`CONTENT_TABLES`): PostgreSQL guarantees that a committed DELETE's rows are seen by no
later transaction, but keeps the dead tuples (and their index entries, the full-text
index's among them) in the table's pages until a vacuum prunes them, which autovacuum
does only when a table has enough dead rows. The vacuum removes them at once. Older
copies in the server's WAL segments, base backups and replicas are the server's: the
gateway cannot reach them, and the page says what an operator must do about them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Generic, TypeVar

import attrs
import trio

from store import dialect
from store.blobs import BlobStore
from store.db import Database
from store.handle import Handle

T = TypeVar("T")

CLEANUP_DEADLINE_S = 60.0
CHECKPOINT_TRIES = 5
CHECKPOINT_RETRY_S = 0.2

logger = logging.getLogger(__name__)


@attrs.frozen
class Blob:
    """A blob of one blob store (files and data documents keep separate ones)."""

    store: BlobStore
    sha256: str


@attrs.frozen
class Removal(Generic[T]):
    """What one erasure's transaction removed: `found`, the caller's answer (what was
    erased, counts), and the blobs no row names any more, shredded after the commit."""

    found: T
    blobs: tuple[Blob, ...] = ()


# `Any` in its argument as `store.db.Work`: the gateway's callables name sqlite-utils'
# `Database`; every handle answers what the store's functions use.
Remove = Callable[[Any], "Removal[T] | None"]

# The tables whose rows are user content (PostgreSQL: vacuumed after an erasure).
CONTENT_TABLES = (
    "files",
    "file_pages",
    "file_chunks",
    "file_pii",
    "file_vectors",
    "file_cursor_places",
    "data_documents",
    "data_chunks",
    "request_log",
)


def remove_rows(db: Handle, remove: Remove[T]) -> Removal[T] | None:
    """Run `remove(db)` in one transaction, with `secure_delete` on on SQLite (it is for
    the whole connection; this makes sure of it). None (nothing committed) when `remove`
    found nothing to erase."""
    if not dialect.of(db).is_postgres:
        db.execute("PRAGMA secure_delete = ON")
    with db.atomic():
        return remove(db)


def checkpoint(db: Handle) -> bool:
    """SQLite: copy the WAL into the database file and truncate it to zero bytes; False
    when another connection (the usage writer's process, another worker) kept it from
    finishing, in which case the WAL still holds old pages. PostgreSQL: vacuum the
    content tables, so the erased rows' dead tuples and index entries leave their pages
    now (a vacuum runs outside any transaction: the handle's connection autocommits)."""
    if dialect.of(db).is_postgres:
        db.execute(f"VACUUM {', '.join(CONTENT_TABLES)}")
        return True
    busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy


async def erase(
    database: Database,
    remove: Remove[T],
    *,
    forget: Callable[[T], Awaitable[None]] | None = None,
) -> T | None:
    """Erase what `remove` deletes, as the module says; `remove`'s `found`, or None when
    there was nothing to erase. Hold the family's blob lock around the call, so that no
    upload of the same bytes is committed between the transaction and the shredding.

    Cancellation: before the transaction, nothing is erased; once it has committed, the
    cleanup (forget, checkpoint, shred) completes shielded, within `CLEANUP_DEADLINE_S`,
    and the cancellation is raised afterwards.
    """
    removal = await database.run(partial(remove_rows, remove=remove))
    if removal is None:
        return None
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + CLEANUP_DEADLINE_S
        if forget is not None:
            await forget(removal.found)
        await _checkpoint(database)
        for blob in removal.blobs:
            await trio.to_thread.run_sync(blob.store.shred, blob.sha256)
    return removal.found


async def _checkpoint(database: Database) -> None:
    """The WAL truncated, retried while another connection holds it (a reader of an old
    snapshot, or a writer) and logged when it never gets through: the next erasure's or
    checkpoint's truncation then clears what this one could not."""
    for _ in range(CHECKPOINT_TRIES):
        if await database.run(checkpoint):
            return
        await trio.sleep(CHECKPOINT_RETRY_S)
    logger.warning("erasure: the WAL is still held; the next erasure's checkpoint clears it")
