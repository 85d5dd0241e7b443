"""The data-document worker: a bounded pool reading document ids from the bounded queue.

Uploads queue their document's id (`DocumentsRuntime.enqueue`: a full queue makes the upload
wait, nothing is dropped). `Settings.document_workers` tasks run
`gateway.documents.processing.process`, one document each at a time. A sweep queues the
documents that are `pending` or `processing` and in no queue: at start (a stopped
gateway's), then every `file_sweep_interval_s` (an upload cancelled while waiting).

Cancellation: the pool stops with the lifespan nursery; a document cut mid-run stays
`processing` and is processed again at the next start.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from gateway.documents.processing import process
from store import documents as document_store

if TYPE_CHECKING:
    from gateway.platform.state import AppState

logger = logging.getLogger(__name__)


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the queue until cancelled."""
    await trio.to_thread.run_sync(state.documents.blobs.clear_temporary)
    async with trio.open_nursery() as nursery:
        for _ in range(max(1, state.settings.document_workers)):
            nursery.start_soon(_serve, state, state.documents.receive.clone())
        nursery.start_soon(_sweep, state)
        task_status.started()


async def _sweep(state: AppState) -> None:
    while True:
        for document_id in await state.db.run(document_store.unfinished):
            await state.documents.enqueue(document_id)
        await trio.sleep(state.settings.file_sweep_interval_s)


async def _serve(state: AppState, ids: trio.MemoryReceiveChannel[str]) -> None:
    async with ids:
        async for document_id in ids:
            try:
                await _one(state, document_id)
            finally:
                state.documents.release(document_id)


async def _one(state: AppState, document_id: str) -> None:
    """An unexpected failure ends the document as `failed` and the pool goes on."""
    record = await state.db.run(lambda d: document_store.get_any(d, document_id))
    if record is None or record.status not in ("pending", "processing"):
        return  # erased while queued, or finished since a sweep read it
    try:
        await process(state, record)
    except Exception as exc:
        logger.exception("data document %s: processing failed unexpectedly", document_id)
        message = f"Processing failed unexpectedly: {type(exc).__name__}"
        await state.db.run(
            lambda d: document_store.update(d, document_id, status="failed", error_message=message)
        )
