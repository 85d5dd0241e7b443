"""Erasure of a data document, by request or by retention, through `store.erasure`.

The store deletes the rows, chunks, vectors and index entries and rewrites the full-text
index, with the audit event in the same transaction; then the in-memory vector index drops
the document's rows (no rebuild), the WAL is truncated and the blob shredded (see
`store.erasure` for what it guarantees and how it behaves on cancellation).
"""

from __future__ import annotations

import sqlite_utils

from gateway.documents.services import DocumentsServices
from store import audit, erasure
from store import documents as document_store
from store.audit import AuditEvent
from store.documents import Erased
from store.erasure import Blob, Removal


async def erase_document(
    services: DocumentsServices, workspace_id: str, document_id: str, event: AuditEvent
) -> Erased | None:
    """Erase the workspace's document; None when there is no such document. Cancellation
    before the transaction erases nothing; after it, the cleanup still completes."""
    runtime = services.runtime

    def remove(db: sqlite_utils.Database) -> Removal[Erased] | None:
        erased = document_store.remove(db, workspace_id, document_id)
        if erased is None:
            return None
        audit.append(db, event)
        unused = (Blob(runtime.blobs, erased.sha256),) if erased.blob_unused else ()
        return Removal(erased, unused)

    async def forget(_: Erased) -> None:
        await runtime.index.remove(workspace_id, document_id)

    async with runtime.blob_lock:
        return await erasure.erase(services.db, remove, forget=forget)
