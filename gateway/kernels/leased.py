"""What the shared key limits and the shared agent budgets both need from a worker: send
their settlements, keep the leases of this process's requests in flight, and send what is
still queued on the way out.

Several tasks send settlements (a few in parallel keep up with the request rate); one
renews the leases every third of the lease. On the way out, settlements still queued are
sent, shielded for at most `FINAL_SETTLE_DEADLINE_S`, so finished requests' reservations
come back at once rather than when their lease expires.
"""

from __future__ import annotations

from typing import Protocol

import trio

FINAL_SETTLE_DEADLINE_S = 2.0


class Leased(Protocol):
    """Counters on the shared server whose reservations are leased."""

    @property
    def lease_s(self) -> float: ...

    async def settle_worker(self) -> None: ...

    async def settle_pending(self) -> None: ...

    async def renew_leases(self) -> None: ...


async def serve(counters: Leased, *, settle_tasks: int) -> None:
    """Settle and renew until cancelled, then send what is queued (see the docstring)."""
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(settle_tasks):
                nursery.start_soon(counters.settle_worker)
            nursery.start_soon(_renew, counters)
    finally:
        with trio.move_on_after(FINAL_SETTLE_DEADLINE_S, shield=True):
            await counters.settle_pending()


async def _renew(counters: Leased) -> None:
    while True:
        await trio.sleep(counters.lease_s / 3)
        await counters.renew_leases()
