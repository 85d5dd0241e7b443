"""A sweep run at a fixed interval by a worker the server's lifespan owns.

The retention workers (data documents, stored responses, the request log) each erased
what had expired with the same loop; this is that loop once. The sweep takes the wall
time as an argument so that tests drive it with a clock of their own, without the loop.

Cancellation: the loop stops with the nursery that owns it, between sweeps or inside one
(a sweep's erasure whose transaction has committed still finishes its cleanup).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import trio


async def sweep_every(
    interval_s: float,
    sweep: Callable[[float], Awaitable[object]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run `sweep(now)` at once and then every `interval_s` seconds until cancelled;
    an interval of 0 or less turns the sweep off."""
    task_status.started()
    if interval_s <= 0:
        return
    while True:
        await sweep(time.time())
        await trio.sleep(interval_s)
