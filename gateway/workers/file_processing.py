"""The file-processing worker: a bounded pool reading file ids from the bounded queue.

Uploads that ask for processing send their file's id on `state.files.send` (a full queue
makes the upload wait: nothing is dropped). `Settings.file_workers` tasks take ids and run
`gateway.files.processing.process`, one file each at a time. At start, files a stopped
gateway left unfinished (`processing`, or queued and never started) are queued again by a
task of this worker, so a file is never stuck: it is processed from the start again.

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
    """Serve the queue until cancelled."""
    await trio.to_thread.run_sync(state.files.blobs.clear_temporary)
    unfinished = await state.db.run(file_store.unfinished)
    async with trio.open_nursery() as nursery:
        for _ in range(max(1, state.settings.file_workers)):
            nursery.start_soon(_serve, state, state.files.receive.clone())
        nursery.start_soon(_requeue, state, [r.id for r in unfinished])
        task_status.started()


async def _requeue(state: AppState, file_ids: list[str]) -> None:
    for file_id in file_ids:
        await state.files.send.send(file_id)


async def _serve(state: AppState, ids: trio.MemoryReceiveChannel[str]) -> None:
    async with ids:
        async for file_id in ids:
            await _one(state, file_id)


async def _one(state: AppState, file_id: str) -> None:
    """Process one file; an unexpected failure ends it as `error` and the pool goes on."""
    record = await state.db.run(lambda d: file_store.get_any(d, file_id))
    if record is None:  # deleted while queued
        return
    try:
        await process(state, record)
    except Exception as exc:
        logger.exception("file %s: processing failed unexpectedly", file_id)
        details = f"processing failed unexpectedly: {type(exc).__name__}"
        await state.db.run(
            lambda d: file_store.update(d, file_id, status="error", status_details=details)
        )
