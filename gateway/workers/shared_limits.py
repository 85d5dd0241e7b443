"""The worker that ends requests on the shared limits and keeps live requests' leases
(`gateway.kernels.leased`).

Only with `redis_url` set (`SharedLimiter`); otherwise it starts and returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from gateway.kernels import leased

if TYPE_CHECKING:
    from gateway.upstream.limits.shared import SharedLimiter

SETTLE_TASKS = 4


async def run(
    limiter: SharedLimiter | None,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled."""
    task_status.started()
    if limiter is not None:
        await leased.serve(limiter, settle_tasks=SETTLE_TASKS)
