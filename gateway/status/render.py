"""The status family's answers: a TypedDict per object (the OpenAPI document's schemas
are written from them) and the functions that build them from the store's records
(management-style: ISO 8601 UTC times)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from gateway.kernels.webhooks.hub import STATUS_EVENTS
from gateway.kernels.webhooks.render import Delivery
from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Doc, Range
from gateway.platform.web import iso
from gateway.status.alert_rules import METRICS, OPERATORS
from gateway.status.incidents import INCIDENT_STATUSES, MAINTENANCE_STATUSES, SEVERITIES
from gateway.status.maintenance import Window
from store.alerts import AlertEvent, AlertRecord
from store.incidents import IncidentRecord, IncidentUpdate
from store.sla import SlaCreditRecord
from store.webhooks import WebhookRecord

Severity = Annotated[str, Choices(SEVERITIES)]
IncidentStatus = Annotated[str, Choices((*INCIDENT_STATUSES, *MAINTENANCE_STATUSES))]
ServiceStatus = Annotated[
    str,
    Choices(
        ("major_outage", "partial_outage", "degraded", "maintenance", "operational", "disabled")
    ),
]


class IncidentChangeRecord(TypedDict):
    """One step of an incident's history."""

    status: IncidentStatus
    severity: Severity
    message: str
    created_at: Time


class Incident(TypedDict):
    """An incident or announced maintenance."""

    id: str
    object: Literal["incident"]
    title: str
    status: IncidentStatus
    severity: Severity
    affected_services: list[str]
    message: str
    source: Annotated[str, Choices(("operator", "monitor"))]
    created_at: Time
    updated_at: Time
    resolved_at: Time | None
    updates: NotRequired[list[IncidentChangeRecord]]


class ServiceRow(TypedDict):
    """A service of the status page: `api`, or a provider."""

    name: str
    status: ServiceStatus
    uptime_30d: Annotated[float, Range(least=0, most=1)]
    latency_p50_ms: float | None


class MaintenanceWindow(TypedDict):
    """The operators' weekly maintenance window."""

    id: str
    name: str
    type: Annotated[str, Choices(("primary", "backup"))]
    status: Annotated[str, Choices(("scheduled", "in_progress"))]
    starts_at: Time
    ends_at: Time


class StatusPage(TypedDict):
    """The workspace's status: its API and providers, open incidents, windows."""

    status: ServiceStatus
    updated_at: Time
    services: list[ServiceRow]
    incidents: list[Incident]
    scheduled_maintenance: list[MaintenanceWindow]


class Webhook(TypedDict):
    """A status webhook subscription."""

    id: str
    object: Literal["status_webhook"]
    url: str
    events: list[Annotated[str, Choices(STATUS_EVENTS)]]
    created_at: Time
    secret: NotRequired[Annotated[str, Doc("The signing secret: in the creation answer only")]]


class AlertConditionShown(TypedDict):
    metric: Annotated[str, Choices(METRICS)]
    operator: Annotated[str, Choices(tuple(OPERATORS))]
    threshold: float
    window_minutes: int


class AlertNotifyShown(TypedDict):
    email: list[str]
    webhook: str | None


class AlertEventShown(TypedDict):
    """An alert firing or recovering, and whether its email went out."""

    kind: str
    value: float | None
    email_status: str
    created_at: Time


class Alert(TypedDict):
    """A usage alert and its state."""

    id: str
    object: Literal["alert"]
    name: str
    condition: AlertConditionShown
    notify: AlertNotifyShown
    state: Annotated[str, Choices(("ok", "firing"))]
    last_value: float | None
    last_evaluated_at: Time | None
    last_changed_at: Time | None
    created_at: Time
    webhook_secret: NotRequired[
        Annotated[str, Doc("The webhook's signing secret: in the creation answer only")]
    ]
    events: NotRequired[list[AlertEventShown]]
    deliveries: NotRequired[list[Delivery]]


class SlaRequest(TypedDict):
    """An SLA-credit request, with the uptime measured and the credit computed."""

    id: str
    object: Literal["sla_credit_request"]
    period: str
    incident_ids: list[str]
    description: str
    plan: Annotated[str, Choices(("free", "pro", "enterprise"))]
    sla_target_percent: float | None
    measured_uptime_percent: float
    downtime_minutes: float
    credit_percent: float
    status: Annotated[str, Choices(("approved", "not_eligible"))]
    created_at: Time


def incident(record: IncidentRecord, updates: list[IncidentUpdate] | None = None) -> Incident:
    body: Incident = {
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


def window(entry: Window, now: datetime) -> MaintenanceWindow:
    return {
        "id": entry.id,
        "name": f"{entry.kind.capitalize()} maintenance window",
        "type": entry.kind,
        "status": entry.status(now),
        "starts_at": iso(entry.starts_at),
        "ends_at": iso(entry.ends_at),
    }


def webhook(record: WebhookRecord, secret: str | None = None) -> Webhook:
    body: Webhook = {
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
) -> Alert:
    body: Alert = {
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


def sla_request(record: SlaCreditRecord) -> SlaRequest:
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
