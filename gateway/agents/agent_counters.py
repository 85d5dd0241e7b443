"""The worker that ends agents' requests on the shared counters and keeps their leases
(`gateway.kernels.leased`).

Only with `redis_url` set (`AgentBook.shared`); otherwise it starts and returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from gateway.kernels import leased

if TYPE_CHECKING:
    from gateway.agents.services import AgentsServices

SETTLE_TASKS = 2


async def run(
    services: AgentsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled."""
    counters = services.agents.shared
    task_status.started()
    if counters is not None:
        await leased.serve(counters, settle_tasks=SETTLE_TASKS)
