"""The status family's output shapes (management-style: ISO 8601 UTC times)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.platform.web import iso
from gateway.status.maintenance import Window
from store.alerts import AlertEvent, AlertRecord
from store.incidents import IncidentRecord, IncidentUpdate
from store.sla import SlaCreditRecord
from store.webhooks import WebhookRecord


def incident(record: IncidentRecord, updates: list[IncidentUpdate] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": record.id,
        "object": "incident",
        "title": record.title,
        "status": record.status,
        "severity": record.severity,
        "affected_services": list(record.affected_services),
        "message": record.message,
        "source": record.source,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "resolved_at": iso(record.resolved_at),
    }
    if updates is not None:
        body["updates"] = [
            {
                "status": u.status,
                "severity": u.severity,
                "message": u.message,
                "created_at": iso(u.created_at),
            }
            for u in updates
        ]
    return body


def event_payload(event: str, record: IncidentRecord, now: datetime) -> dict[str, Any]:
    """The spec's status webhook payload."""
    return {
        "event": event,
        "timestamp": iso(now),
        "incident": {
            "id": record.id,
            "title": record.title,
            "status": record.status,
            "severity": record.severity,
            "affected_services": list(record.affected_services),
            "message": record.message,
        },
    }


def window(entry: Window, now: datetime) -> dict[str, Any]:
    return {
        "id": entry.id,
        "name": f"{entry.kind.capitalize()} maintenance window",
        "type": entry.kind,
        "status": entry.status(now),
        "starts_at": iso(entry.starts_at),
        "ends_at": iso(entry.ends_at),
    }


def webhook(record: WebhookRecord, secret: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": record.id,
        "object": "status_webhook",
        "url": record.url,
        "events": list(record.events),
        "created_at": iso(record.created_at),
    }
    if secret is not None:
        body["secret"] = secret
    return body


def alert(
    record: AlertRecord, events: list[AlertEvent] | None = None, secret: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": record.id,
        "object": "alert",
        "name": record.name,
        "condition": {
            "metric": record.metric,
            "operator": record.operator,
            "threshold": record.threshold,
            "window_minutes": record.window_minutes,
        },
        "notify": {"email": list(record.notify_email), "webhook": record.notify_webhook},
        "state": record.state,
        "last_value": record.last_value,
        "last_evaluated_at": iso(record.last_evaluated_at),
        "last_changed_at": iso(record.last_changed_at),
        "created_at": iso(record.created_at),
    }
    if secret is not None:
        body["webhook_secret"] = secret
    if events is not None:
        body["events"] = [
            {
                "kind": e.kind,
                "value": e.value,
                "email_status": e.email_status,
                "created_at": iso(e.created_at),
            }
            for e in events
        ]
    return body


def alert_payload(
    event: str, record: AlertRecord, value: float | None, now: datetime
) -> dict[str, Any]:
    return {
        "event": event,
        "timestamp": iso(now),
        "alert": {
            "id": record.id,
            "name": record.name,
            "metric": record.metric,
            "operator": record.operator,
            "threshold": record.threshold,
            "window_minutes": record.window_minutes,
            "value": value,
        },
    }


def sla_request(record: SlaCreditRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "sla_credit_request",
        "period": record.period,
        "incident_ids": list(record.incident_ids),
        "description": record.description,
        "plan": record.plan,
        "sla_target_percent": record.sla_target,
        "measured_uptime_percent": record.measured_uptime,
        "downtime_minutes": record.downtime_minutes,
        "credit_percent": record.credit_percent,
        "status": record.status,
        "created_at": iso(record.created_at),
    }
