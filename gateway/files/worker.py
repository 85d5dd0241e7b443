"""The file-processing worker: the shared queued pool (`gateway.platform.work_queue`) over
the files' queue, `Settings.file_workers` tasks running `gateway.files.processing.process`;
the sweep queues the files that want processing and are unfinished (`processing`, or
queued and never started: processed from the start again). An unexpected failure ends the
file as `error`. Before serving, what a crash left in the blob store is removed (before the
server accepts uploads, so no upload in progress looks orphaned).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from gateway.files.processing import process
from gateway.platform.work_queue import Work, serve
from store import files as file_store

if TYPE_CHECKING:
    from gateway.files.services import FilesServices

logger = logging.getLogger(__name__)


async def run(
    services: FilesServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the queue until cancelled."""
    await _sweep_blobs(services)

    async def one(file_id: str) -> None:
        # An agent upload's reservation is given back first: the stages reserve their own.
        services.runtime.started(file_id)
        record = await services.db.run(lambda d: file_store.get_any(d, file_id))
        if record is not None and record.status in ("uploaded", "processing"):
            await process(services, record)  # else deleted while queued, or finished since

    async def failed(file_id: str, exc: Exception) -> None:
        details = f"processing failed unexpectedly: {type(exc).__name__}"
        await services.db.run(
            lambda d: file_store.update(d, file_id, status="error", status_details=details)
        )

    async def unfinished() -> list[str]:
        return [r.id for r in await services.db.run(file_store.unfinished)]

    work = Work(
        "file",
        services.runtime.queue,
        services.settings.file_workers,
        services.settings.file_sweep_interval_s,
        unfinished,
        one,
        failed,
    )
    await serve(work, task_status=task_status)


async def _sweep_blobs(services: FilesServices) -> None:
    in_use = await services.db.run(file_store.blob_digests)
    temporary, orphans = await trio.to_thread.run_sync(services.runtime.blobs.sweep, in_use)
    if temporary or orphans:
        logger.warning(
            "blob store: removed %d half-written uploads and %d orphan blobs left by a crash",
            temporary,
            orphans,
        )
