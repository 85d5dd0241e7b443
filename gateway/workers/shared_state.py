"""The worker that keeps the circuit breakers shared between processes.

Only with `redis_url` set (`SharedBreakers`); otherwise it starts and returns. Its tasks:
the reporter (outcomes queued by the engine) and the listener (transitions heard from
every worker, applied to this process's `BreakerBook`). Neither can fail a request, and
both survive the server going away. (The shared response cache's writer is chat's worker,
`gateway.chat.cache.shared`; the realtime counters' are analytics', `gateway.analytics.live`.)
"""

from __future__ import annotations

import trio

from gateway.upstream.circuit import BreakerBook
from gateway.upstream.shared_breakers import SharedBreakers


async def run(
    breakers: SharedBreakers | None,
    book: BreakerBook,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled. Ready once the breaker subscription is up (or its first
    attempt failed)."""
    if breakers is None:
        task_status.started()
        return
    async with trio.open_nursery() as nursery:
        nursery.start_soon(breakers.reporter)
        await nursery.start(breakers.listen, book)
        task_status.started()
