"""The data-document worker: the shared queued pool (`gateway.platform.work_queue`) over the
documents' queue, `Settings.document_workers` tasks running
`gateway.documents.processing.process`; the sweep queues the documents `pending` or
`processing`. An unexpected failure ends the document as `failed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from gateway.documents.processing import process
from gateway.platform.work_queue import Work, serve
from store import documents as document_store

if TYPE_CHECKING:
    from gateway.documents.services import DocumentsServices


async def run(
    services: DocumentsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the queue until cancelled (first clearing half-written uploads, and shredding
    blobs no document names: an erasure a crash cut short after its commit)."""
    in_use = await services.db.run(document_store.blob_digests)
    await trio.to_thread.run_sync(services.runtime.blobs.sweep, in_use)

    async def one(document_id: str) -> None:
        record = await services.db.run(lambda d: document_store.get_any(d, document_id))
        if record is not None and record.status in ("pending", "processing"):
            await process(services, record)  # else erased while queued, or finished since

    async def failed(document_id: str, exc: Exception) -> None:
        message = f"Processing failed unexpectedly: {type(exc).__name__}"
        await services.db.run(
            lambda d: document_store.update(d, document_id, status="failed", error_message=message)
        )

    work = Work(
        "data document",
        services.runtime.queue,
        services.settings.document_workers,
        services.settings.file_sweep_interval_s,
        lambda: services.db.run(document_store.unfinished),
        one,
        failed,
    )
    await serve(work, task_status=task_status)
