"""The worker that ends requests on the shared limits and keeps live requests' leases.

Only with `redis_url` set (`AppState.shared_limits`); otherwise it starts and returns.
Several tasks send settlements (one command each, so a few in parallel keep up with the
request rate); one renews the leases of this process's requests in flight every third
of the lease. On the way out, settlements still queued are sent, shielded for at most
`FINAL_SETTLE_DEADLINE_S`, so the slots of finished requests come back at once rather
than when their lease expires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from gateway.platform.state import AppState
    from gateway.upstream.limits.shared import SharedLimiter

SETTLE_TASKS = 4
FINAL_SETTLE_DEADLINE_S = 2.0


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled (see the module docstring)."""
    limiter = state.shared_limits
    task_status.started()
    if limiter is None:
        return
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(SETTLE_TASKS):
                nursery.start_soon(limiter.settle_worker)
            nursery.start_soon(_renew, limiter)
    finally:
        with trio.move_on_after(FINAL_SETTLE_DEADLINE_S, shield=True):
            await limiter.settle_pending()


async def _renew(limiter: SharedLimiter) -> None:
    while True:
        await trio.sleep(limiter.lease_s / 3)
        await limiter.renew_leases()
