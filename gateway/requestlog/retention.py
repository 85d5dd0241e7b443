"""The worker that erases the request log's entries past its window (`request_log_days`).

Every `retention_check_interval_s` (0: off) it erases the entries older than the window
(with the log off, every entry) through `store.erasure`, so that the bodies some hold
leave the disk as an erasure's do. `purge` takes the wall time as an argument so tests
drive it with a clock of their own.

Cancellation: the loop stops with the lifespan nursery; an erasure whose transaction has
committed still finishes its cleanup.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import trio

from gateway.kernels.periodic import sweep_every
from gateway.requestlog.services import RequestLogServices
from store import erasure, request_log
from store.erasure import Removal
from store.handle import Handle

logger = logging.getLogger(__name__)


async def run(
    services: RequestLogServices,
    interval_s: float,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    await sweep_every(interval_s, lambda now: purge(services, now=now), task_status=task_status)


async def purge(services: RequestLogServices, *, now: float) -> int:
    """Erase the entries older than the window at `now` (Unix seconds); how many went."""
    days = max(services.window_days, 0.0)
    cutoff = datetime.fromtimestamp(now - days * 86_400, UTC)
    if not await services.db.run(lambda d: request_log.oldest_before(d, cutoff)):
        return 0

    def remove(db: Handle) -> Removal[tuple[int, int]]:
        return Removal(request_log.purge_before(db, cutoff))

    purged = await erasure.erase(services.db, remove)
    deleted, bodies = purged if purged is not None else (0, 0)
    if deleted:
        logger.info("request log: %d entries past the window erased (%d bodies)", deleted, bodies)
    return deleted
