"""The worker that delivers status webhooks and alert notifications.

It reads the hub's bounded queue (`gateway.kernels.webhooks.hub`), fans status events out to their
subscriptions, and hands each delivery to its destination's own bounded queue, served by
`webhook_destination_concurrency` tasks. A slow or dead receiver therefore fills only its
own queue (further deliveries to it are marked `dropped`, never waited for) while every
other receiver, and every request, goes on. All tasks live in this worker's nursery and
end with it; the httpx client is built here, with explicit timeouts and limits, and
follows no redirects. At start the deliveries a stop left `pending` are queued again.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import attrs
import httpx
import trio

from gateway.kernels.webhooks.delivery import Attempt, Deliverer, Recorder, RetryPolicy
from gateway.kernels.webhooks.hub import DeliveryJob, StatusEvent
from gateway.kernels.webhooks.notify import fan_out, resumable
from gateway.kernels.webhooks.services import Webhooks
from providers.upstream.guard import webhook_policy
from store import webhooks as webhook_store

logger = logging.getLogger(__name__)


def deliverer(webhooks: Webhooks, client: httpx.AsyncClient) -> Deliverer:
    settings = webhooks.settings
    policy = RetryPolicy(
        base_s=settings.webhook_retry_base_s,
        window_s=settings.webhook_retry_window_s,
        attempt_timeout_s=settings.webhook_timeout_s,
    )
    return Deliverer(client, policy, webhook_policy(settings.webhook_allowed_hosts))


async def run(
    webhooks: Webhooks, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Deliver until cancelled; deliveries cut short stay `pending` in the log and are
    resumed when the worker starts again (within their retry window)."""
    timeout = webhooks.settings.webhook_timeout_s
    async with (
        httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            follow_redirects=False,
            trust_env=False,
        ) as client,
        trio.open_nursery() as nursery,
    ):
        router = Router(webhooks, deliverer(webhooks, client), nursery)
        # Read before readiness, so that nothing logged from now on is resumed twice.
        resumed = await resumable(webhooks, datetime.now(UTC))
        task_status.started()
        router.resume(resumed)
        async for item in webhooks.hub.receive:
            now = datetime.now(UTC)
            jobs = await fan_out(webhooks, item, now) if isinstance(item, StatusEvent) else [item]
            for job in jobs:
                await router.dispatch(job, now)


@attrs.define(eq=False)
class Router:
    """Per-destination queues and their delivery tasks, created on first use."""

    webhooks: Webhooks
    deliverer: Deliverer
    nursery: trio.Nursery
    queues: dict[str, trio.MemorySendChannel[DeliveryJob]] = attrs.field(factory=dict)

    def resume(self, jobs: list[DeliveryJob]) -> None:
        """Queue the deliveries a stop cut short, oldest first, waiting for room rather
        than dropping them: one task per destination, so a slow one holds back only its
        own (and new notifications go on being dispatched meanwhile)."""
        by_destination: dict[str, list[DeliveryJob]] = {}
        for job in jobs:
            by_destination.setdefault(destination(job.url), []).append(job)
        for group in by_destination.values():
            self.nursery.start_soon(self._requeue, group)

    async def _requeue(self, jobs: list[DeliveryJob]) -> None:
        queue = self._queue(jobs[0])
        for job in jobs:
            await queue.send(job)

    def _queue(self, job: DeliveryJob) -> trio.MemorySendChannel[DeliveryJob]:
        queue = self.queues.get(destination(job.url))
        return self._open(destination(job.url)) if queue is None else queue

    async def dispatch(self, job: DeliveryJob, now: datetime) -> None:
        queue = self._queue(job)
        try:
            queue.send_nowait(job)
        except trio.WouldBlock:
            await self.webhooks.db.run(
                lambda d: webhook_store.mark(
                    d, job.delivery_id, "dropped", "destination queue full", now
                )
            )

    def _open(self, key: str) -> trio.MemorySendChannel[DeliveryJob]:
        settings = self.webhooks.settings
        send, receive = trio.open_memory_channel[DeliveryJob](
            settings.webhook_destination_queue_size
        )
        for _ in range(settings.webhook_destination_concurrency):
            self.nursery.start_soon(self._serve, receive.clone())
        receive.close()  # the clones keep the queue open
        self.queues[key] = send
        return send

    async def _serve(self, receive: trio.MemoryReceiveChannel[DeliveryJob]) -> None:
        async with receive:
            async for job in receive:
                try:
                    await self.deliverer.deliver(job, self._recorder(job))
                except Exception:
                    # A bug with one delivery must not stop every other (nor the gateway,
                    # whose lifespan nursery owns this worker); it stays `pending`.
                    # trio.Cancelled is not an Exception, so shutdown still goes through.
                    logger.exception("delivery %s failed unexpectedly", job.delivery_id)

    def _recorder(self, job: DeliveryJob) -> Recorder:
        async def record(outcome: Attempt, status: str) -> str | None:
            now = datetime.now(UTC)
            return await self.webhooks.db.run(
                lambda d: webhook_store.record_attempt(
                    d,
                    job.delivery_id,
                    status=status,
                    status_code=outcome.status_code,
                    error=outcome.error,
                    now=now,
                )
            )

        return record


def destination(url: str) -> str:
    """Deliveries are grouped by scheme, host and port."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return url
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or ''}".lower()
