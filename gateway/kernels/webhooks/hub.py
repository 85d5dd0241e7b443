"""The bounded queue between whoever produces notifications and the delivery worker.

Producers (the incident monitor, operators' incident endpoints, the alert evaluator) never
wait on it: `publish` and `submit` put without blocking, and when the queue is full the
item is dropped and counted (a notification storm must not stall a request or a worker).
The delivery worker (`gateway.workers.webhook_delivery`) is the only reader.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import trio

logger = logging.getLogger(__name__)

STATUS_EVENTS = (
    "incident.created",
    "incident.updated",
    "incident.resolved",
    "maintenance.scheduled",
    "maintenance.started",
    "maintenance.completed",
)
QUEUE_CAPACITY = 1000


@attrs.frozen
class StatusEvent:
    """One of the spec's six status events for a workspace's subscribers."""

    workspace_id: str
    event: str
    payload: dict[str, Any]


@attrs.frozen
class DeliveryJob:
    """One signed call to make, already in the delivery log as `delivery_id`.

    A delivery resumed after a restart carries the attempts it already made and the time
    already spent in its retry window, so its backoff and its window go on from there.
    """

    delivery_id: str
    url: str
    secret: str = attrs.field(repr=False)
    event: str
    body: bytes
    attempts: int = 0
    elapsed_s: float = 0.0


Outgoing = StatusEvent | DeliveryJob


@attrs.define(eq=False)
class StatusHub:
    capacity: int = QUEUE_CAPACITY
    dropped: int = 0
    _send: trio.MemorySendChannel[Outgoing] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[Outgoing] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self.receive = trio.open_memory_channel[Outgoing](self.capacity)

    def publish(self, event: StatusEvent) -> bool:
        """Queue a status event for fan-out; False (and counted) when the queue is full."""
        return self._put(event)

    def submit(self, job: DeliveryJob) -> bool:
        """Queue a ready delivery; False when the queue is full (the caller marks it)."""
        return self._put(job)

    def _put(self, item: Outgoing) -> bool:
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            self.dropped += 1
            logger.warning("notification queue full; dropped %s", type(item).__name__)
            return False
        return True
