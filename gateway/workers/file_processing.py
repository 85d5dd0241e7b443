"""The file-processing worker: a bounded pool reading file ids from the bounded queue.

Uploads that ask for processing queue their file's id (`FilesRuntime.enqueue`: a full
queue makes the upload wait: nothing is dropped). `Settings.file_workers` tasks take ids and
run `gateway.files.processing.process`, one file each at a time. A sweep task queues the
files that want processing and are in no queue: at start, those a stopped gateway left
unfinished (`processing`, or queued and never started), processed from the start again;
later, any whose upload was cancelled while waiting for queue space. No file stays stuck.

Cancellation: the pool stops with the lifespan nursery; a file cut mid-run stays
`processing` in the store and is resumed at the next start.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from gateway.files.processing import process
from store import files as file_store

if TYPE_CHECKING:
    from gateway.platform.state import AppState

logger = logging.getLogger(__name__)


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the queue until cancelled; first remove what a crash left in the blob store
    (before the server accepts uploads, so no upload in progress looks orphaned)."""
    await _sweep_blobs(state)
    async with trio.open_nursery() as nursery:
        for _ in range(max(1, state.settings.file_workers)):
            nursery.start_soon(_serve, state, state.files.receive.clone())
        nursery.start_soon(_sweep, state)
        task_status.started()


async def _sweep_blobs(state: AppState) -> None:
    in_use = await state.db.run(file_store.blob_digests)
    temporary, orphans = await trio.to_thread.run_sync(state.files.blobs.sweep, in_use)
    if temporary or orphans:
        logger.warning(
            "blob store: removed %d half-written uploads and %d orphan blobs left by a crash",
            temporary,
            orphans,
        )


async def _sweep(state: AppState) -> None:
    """Queue the files that want processing and are in no queue: at start (a stopped
    gateway's), then every `file_sweep_interval_s` (an upload cancelled while waiting for
    queue space). Waits like an upload when the queue is full."""
    while True:
        for record in await state.db.run(file_store.unfinished):
            await state.files.enqueue(record.id)
        await trio.sleep(state.settings.file_sweep_interval_s)


async def _serve(state: AppState, ids: trio.MemoryReceiveChannel[str]) -> None:
    async with ids:
        async for file_id in ids:
            await _one(state, file_id)


async def _one(state: AppState, file_id: str) -> None:
    """Process one file, then release its claim (whatever happened). An agent upload's
    reservation is given back first: the stages reserve their own shares."""
    try:
        state.files.started(file_id)
        await _process_one(state, file_id)
    finally:
        state.files.release(file_id)


async def _process_one(state: AppState, file_id: str) -> None:
    """An unexpected failure ends the file as `error` and the pool goes on."""
    record = await state.db.run(lambda d: file_store.get_any(d, file_id))
    if record is None or record.status not in ("uploaded", "processing"):
        return  # deleted while queued, or finished since a sweep read it
    try:
        await process(state, record)
    except Exception as exc:
        logger.exception("file %s: processing failed unexpectedly", file_id)
        details = f"processing failed unexpectedly: {type(exc).__name__}"
        await state.db.run(
            lambda d: file_store.update(d, file_id, status="error", status_details=details)
        )
