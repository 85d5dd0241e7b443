"""A webhook delivery as the management API shows it (status webhooks, alerts, agents)."""

from __future__ import annotations

import json
from typing import Any

from gateway.platform.web import iso
from store.webhooks import DeliveryRecord


def delivery(record: DeliveryRecord) -> dict[str, Any]:
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
