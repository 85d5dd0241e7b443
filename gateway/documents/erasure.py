"""Erasure: the one way a data document is removed, by request or by retention.

In order: the store deletes the rows, chunks, vectors and index entries with secure_delete
and rewrites the full-text index, the audit event in the same transaction; the in-memory
vector index drops the document's rows (no rebuild); the WAL is checkpointed and truncated;
the blob is overwritten and unlinked. The steps after the transaction are cleanup that
must not be skipped when the caller is cancelled (a client gone after the commit), so they
run shielded, under a deadline.
"""

from __future__ import annotations

import trio

from gateway.platform.state import AppState
from store import audit
from store import documents as document_store
from store.audit import AuditEvent
from store.documents import Erased

CLEANUP_DEADLINE_S = 60.0


async def erase_document(
    state: AppState, workspace_id: str, document_id: str, event: AuditEvent
) -> Erased | None:
    """Erase the workspace's document; None when there is no such document. Cancellation
    before the transaction erases nothing; after it, the cleanup still completes."""
    runtime = state.documents
    async with runtime.blob_lock:
        erased = await state.db.run(
            lambda d: document_store.erase(
                d, workspace_id, document_id, also=lambda d: audit.append(d, event)
            )
        )
        if erased is None:
            return None
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + CLEANUP_DEADLINE_S
            await runtime.index.remove(workspace_id, document_id)
            await state.db.run(document_store.checkpoint)
            if erased.blob_unused:
                await trio.to_thread.run_sync(runtime.blobs.shred, erased.sha256)
    return erased
