"""A webhook delivery as the management API shows it (status webhooks, alerts, agents)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypedDict

from gateway.platform.answers import Time
from gateway.platform.shapes import Choices
from gateway.platform.web import iso
from store.webhooks import DeliveryRecord


class Delivery(TypedDict):
    """One webhook delivery: its event, the attempts and how they went."""

    id: str
    object: Literal["webhook_delivery"]
    event: str
    url: str
    status: Annotated[str, Choices(("pending", "delivered", "failed", "dropped"))]
    attempts: int
    last_status_code: int | None
    last_error: str | None
    payload: dict[str, Any]
    created_at: Time
    updated_at: Time
    delivered_at: Time | None


def delivery(record: DeliveryRecord) -> Delivery:
    return {
        "id": record.id,
        "object": "webhook_delivery",
        "event": record.event,
        "url": record.url,
        "status": record.status,
        "attempts": record.attempts,
        "last_status_code": record.last_status_code,
        "last_error": record.last_error,
        "payload": json.loads(record.payload),
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "delivered_at": iso(record.delivered_at),
    }
