"""The analytics export worker: builds queued exports one at a time, and deletes the files
of expired ones.

Ids arrive on `analytics.exports` (a bounded queue: a full one makes the POST wait). At start,
exports a stopped gateway left `processing` are built first. An export whose build fails
unexpectedly ends `failed` (with the error's class) and the worker goes on. Every
`export_sweep_interval_s` the sweep deletes the files whose download period ended.

Cancellation: the worker stops with the lifespan nursery; an export cut mid-build keeps
its `processing` record (its partial file removed) and is built again at the next start.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import trio

from gateway.analytics.export_build import build, expire_due
from store import exports as export_store

if TYPE_CHECKING:
    from gateway.analytics.services import AnalyticsServices

logger = logging.getLogger(__name__)


async def run(
    analytics: AnalyticsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the queue and the expiry sweep until cancelled."""
    left = await analytics.db.run(export_store.processing_ids)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_sweep, analytics)
        task_status.started()
        for export_id in left:
            await _one(analytics, export_id)
        async for export_id in analytics.exports.receive:
            await _one(analytics, export_id)


async def _sweep(analytics: AnalyticsServices) -> None:
    while True:
        await expire_due(analytics, datetime.now(UTC))
        await trio.sleep(analytics.settings.export_sweep_interval_s)


async def _one(analytics: AnalyticsServices, export_id: str) -> None:
    record = await analytics.db.run(lambda d: export_store.get(d, export_id))
    if record is None or record.status != "processing":
        return  # built already (queued twice across a restart)
    try:
        await build(analytics, record)
    except Exception as exc:
        logger.exception("analytics export %s failed", export_id)
        error = f"the export could not be built: {type(exc).__name__}"
        await analytics.db.run(lambda d: export_store.fail(d, export_id, error))
