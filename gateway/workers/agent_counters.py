"""The worker that ends agents' requests on the shared counters and keeps their leases.

Only with `redis_url` set (`AgentBook.shared`); otherwise it starts and returns. Several
tasks send settlements; one renews the leases of this process's agent reservations in
flight every third of the lease. On the way out, settlements still queued are sent,
shielded for at most `FINAL_SETTLE_DEADLINE_S`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from gateway.agents.shared import SharedAgentCounters
    from gateway.platform.state import AppState

SETTLE_TASKS = 2
FINAL_SETTLE_DEADLINE_S = 2.0


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled (see the module docstring)."""
    counters = state.agents.shared
    task_status.started()
    if counters is None:
        return
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(SETTLE_TASKS):
                nursery.start_soon(counters.settle_worker)
            nursery.start_soon(_renew, counters)
    finally:
        with trio.move_on_after(FINAL_SETTLE_DEADLINE_S, shield=True):
            await counters.settle_pending()


async def _renew(counters: SharedAgentCounters) -> None:
    while True:
        await trio.sleep(counters.lease_s / 3)
        await counters.renew()
