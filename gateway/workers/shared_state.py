"""The worker that keeps the response cache, the breakers and the realtime counters shared.

Only with `redis_url` set (`AppState.shared_cache` and the others); otherwise it starts
and returns. Its tasks: the cache writer (answers queued by requests), the breaker
reporter (outcomes queued by `gateway.upstream.chain`) and listener (transitions heard
from every worker, applied to this process's `BreakerBook`), the realtime flusher and
heartbeat. Each state's failure policy is in its module; none of these tasks can fail a
request, and each survives the server going away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from gateway.analytics.service import queue_depth

if TYPE_CHECKING:
    from gateway.analytics.live import Gauges
    from gateway.app.state import AppState


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled (see the module docstring). Ready once the breaker
    subscription is up (or its first attempt failed)."""
    cache, breakers, live = state.shared_cache, state.shared_breakers, state.shared_live
    async with trio.open_nursery() as nursery:
        if cache is not None:
            nursery.start_soon(cache.writer)
        if breakers is not None:
            nursery.start_soon(breakers.reporter)
            await nursery.start(breakers.listen, state.breakers)
        if live is not None:
            nursery.start_soon(live.flusher)
            nursery.start_soon(live.beat, lambda: gauges(state))
        task_status.started()


def gauges(state: AppState) -> Gauges:
    """This process's requests in flight and requests queued for capacity."""
    return state.drain.in_flight, queue_depth(state)
