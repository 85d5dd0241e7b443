"""Per-destination queues of the delivery worker at exact virtual times: at most
`webhook_destination_concurrency` calls to one destination at once, and a destination
that holds its calls delays no other."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import trio

from gateway.kernels.webhooks.hub import DeliveryJob
from gateway.kernels.webhooks.services import Webhooks
from gateway.workers.webhook_delivery import Router


class SlowDeliverer:
    """Each call to `slow.example` takes 10 s, any other 1 s; notes when each started."""

    def __init__(self) -> None:
        self.started: list[tuple[str, float]] = []
        self.in_flight: dict[str, int] = {}
        self.most: dict[str, int] = {}

    async def deliver(self, job: DeliveryJob, record: Any) -> str:
        host = job.url.split("/")[2]
        self.started.append((job.delivery_id, trio.current_time()))
        self.in_flight[host] = self.in_flight.get(host, 0) + 1
        self.most[host] = max(self.most.get(host, 0), self.in_flight[host])
        try:
            await trio.sleep(10 if host == "slow.example" else 1)
        finally:
            self.in_flight[host] -= 1
        return "delivered"


def job(delivery_id: str, host: str) -> DeliveryJob:
    return DeliveryJob(delivery_id, f"https://{host}/in", "whsec_k", "incident.created", b"{}")


async def test_two_at_a_time_per_destination_and_no_waiting_on_others(
    autojump_clock: trio.abc.Clock,
) -> None:
    settings = SimpleNamespace(webhook_destination_queue_size=10, webhook_destination_concurrency=2)
    state = cast(Webhooks, SimpleNamespace(settings=settings))
    deliverer = SlowDeliverer()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        router = Router(state, cast(Any, deliverer), nursery)
        now = datetime.now(UTC)
        for n in range(5):
            await router.dispatch(job(f"slow{n}", "slow.example"), now)
        await router.dispatch(job("fast", "fast.example"), now)
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    times = {delivery: at - start for delivery, at in deliverer.started}
    assert times == {"slow0": 0, "slow1": 0, "slow2": 10, "slow3": 10, "slow4": 20, "fast": 0}
    assert deliverer.most == {"slow.example": 2, "fast.example": 1}


async def test_resumed_deliveries_wait_for_room_per_destination(
    autojump_clock: trio.abc.Clock,
) -> None:
    """After a restart, a slow destination's backlog (more than its queue holds) waits for
    room instead of being dropped, and holds back no other destination's deliveries."""
    settings = SimpleNamespace(webhook_destination_queue_size=1, webhook_destination_concurrency=1)
    state = cast(Webhooks, SimpleNamespace(settings=settings))
    deliverer = SlowDeliverer()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        router = Router(state, cast(Any, deliverer), nursery)
        backlog = [job(f"slow{n}", "slow.example") for n in range(4)]
        router.resume([*backlog, job("fast", "fast.example")])
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    times = {delivery: at - start for delivery, at in deliverer.started}
    assert times == {"slow0": 0, "slow1": 10, "slow2": 20, "slow3": 30, "fast": 0}
