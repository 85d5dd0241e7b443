"""The worker that erases stored responses past their retention (`responses_retention_days`).

Every `retention_check_interval_s` (0: off) it erases each expired stored response as a
DELETE does (`store.erasure`). No audit event: a stored response is a request's record, as
its usage record is, not a managed object. `sweep` takes the wall time as an argument so
tests drive it with a clock of their own.

Cancellation: the loop stops with the lifespan nursery; an erasure whose transaction has
committed still finishes its cleanup.
"""

from __future__ import annotations

import logging

import trio

from gateway.kernels.periodic import sweep_every
from gateway.responses.services import ResponsesServices
from store import responses as response_store

logger = logging.getLogger(__name__)


async def run(
    responses: ResponsesServices,
    interval_s: float,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    await sweep_every(interval_s, lambda now: sweep(responses, now=now), task_status=task_status)


async def sweep(responses: ResponsesServices, *, now: float) -> list[str]:
    """Erase every stored response whose retention ended by `now`; the ids erased."""
    db = responses.db
    erased = []
    for workspace_id, response_id in await db.run(lambda d: response_store.expired(d, now)):
        if await response_store.erase_one(db, responses.keeper, workspace_id, response_id):
            erased.append(response_id)
    if erased:
        logger.info("%d stored responses erased: retention expired", len(erased))
    return erased
