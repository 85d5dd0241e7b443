"""The status family: the status page, status webhooks, incidents, alerts, SLA credits.

Shapes follow `gateway.status.render`; request bodies are closed because
`gateway.status.input` refuses unknown fields (a misspelt option is a 400, not ignored).
Every management route also answers 404 for an `X-Workspace-ID` the caller cannot reach.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    AUTH_ERRORS,
    INT,
    NUM,
    STR,
    STRS,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    deleted,
    listing,
    nullable,
    obj,
)

ERRORS = (*AUTH_ERRORS, 404)
CONFLICTS = (*ERRORS, 409)
STATUS = "status"
INCIDENTS = "incidents"
ALERTS = "alerts"
BILLING = "billing"
DATE_TIME: Schema = {"type": "string", "format": "date-time"}
SEVERITY: Schema = {"enum": ["critical", "major", "minor", "maintenance"]}
INCIDENT_STATUS: Schema = {
    "enum": [
        "investigating",
        "identified",
        "monitoring",
        "resolved",
        "scheduled",
        "in_progress",
        "completed",
    ]
}
SERVICE_STATUS: Schema = {
    "enum": [
        "major_outage",
        "partial_outage",
        "degraded",
        "maintenance",
        "operational",
        "disabled",
    ]
}
EVENTS: Schema = {
    "enum": [
        "incident.created",
        "incident.updated",
        "incident.resolved",
        "maintenance.scheduled",
        "maintenance.started",
        "maintenance.completed",
    ]
}


INCIDENT_UPDATE = all_required(
    status=INCIDENT_STATUS,
    severity=SEVERITY,
    message=STR,
    created_at=DATE_TIME,
)
INCIDENT = obj(
    (
        "id",
        "object",
        "title",
        "status",
        "severity",
        "affected_services",
        "message",
        "source",
        "created_at",
        "updated_at",
        "resolved_at",
    ),
    id=STR,
    object={"const": "incident"},
    title=STR,
    status=INCIDENT_STATUS,
    severity=SEVERITY,
    affected_services=STRS,
    message=STR,
    source={"enum": ["operator", "monitor"]},
    created_at=DATE_TIME,
    updated_at=DATE_TIME,
    resolved_at=TIME,
    updates=arr(INCIDENT_UPDATE),
)
SERVICE_ROW = all_required(
    name=STR,
    status=SERVICE_STATUS,
    uptime_30d={"type": "number", "minimum": 0, "maximum": 1},
    latency_p50_ms=nullable(NUM),
)
WINDOW = all_required(
    id=STR,
    name=STR,
    type={"enum": ["primary", "backup"]},
    status={"enum": ["scheduled", "in_progress"]},
    starts_at=DATE_TIME,
    ends_at=DATE_TIME,
)
STATUS_PAGE = all_required(
    status=SERVICE_STATUS,
    updated_at=DATE_TIME,
    services=arr(SERVICE_ROW),
    incidents=arr(INCIDENT),
    scheduled_maintenance=arr(WINDOW),
)
WEBHOOK = all_required(
    id=STR,
    object={"const": "status_webhook"},
    url=STR,
    events=arr(EVENTS),
    created_at=DATE_TIME,
)
DELIVERY = all_required(
    id=STR,
    object={"const": "webhook_delivery"},
    event=STR,
    url=STR,
    status={"enum": ["pending", "delivered", "failed", "dropped"]},
    attempts=INT,
    last_status_code=nullable(INT),
    last_error=nullable(STR),
    payload=ANY_OBJ,
    created_at=DATE_TIME,
    updated_at=DATE_TIME,
    delivered_at=TIME,
)
TEXT: Schema = {"type": "string", "maxLength": 2000}
NAME: Schema = {"type": "string", "minLength": 1, "maxLength": 200}

STATUS_OPERATIONS = {
    "status.status_page": Operation(
        "The workspace's status page: services, open incidents, maintenance windows",
        STATUS,
        STATUS_PAGE,
    ),
    "status.list_webhooks": Operation("Status webhook subscriptions", STATUS, listing(WEBHOOK)),
    "status.create_webhook": Operation(
        "Subscribe a URL to status events; the signing secret is in this answer only",
        STATUS,
        {"allOf": [WEBHOOK, all_required(secret=STR)]},
        status=201,
        request=closed(
            ("url", "events"),
            url={"type": "string", "minLength": 1, "maxLength": 2048},
            events=arr(EVENTS, minItems=1),
        ),
        errors=CONFLICTS,
    ),
    "status.read_webhook": Operation("One subscription", STATUS, WEBHOOK, errors=ERRORS),
    "status.delete_webhook": Operation(
        "Unsubscribe", STATUS, deleted("status_webhook"), errors=ERRORS
    ),
    "status.webhook_deliveries": Operation(
        "A subscription's delivery log, newest first", STATUS, listing(DELIVERY), errors=ERRORS
    ),
}

INCIDENT_OPERATIONS = {
    "status.list_incidents": Operation(
        "Incidents, newest first", INCIDENTS, listing(INCIDENT), errors=ERRORS
    ),
    "status.create_incident": Operation(
        "Open an incident (or announce maintenance)",
        INCIDENTS,
        INCIDENT,
        status=201,
        request=closed(
            ("title", "severity"),
            title=NAME,
            severity=SEVERITY,
            status=INCIDENT_STATUS,
            message=TEXT,
            affected_services=arr(NAME, maxItems=20),
        ),
        errors=ERRORS,
    ),
    "status.read_incident": Operation(
        "One incident with its updates", INCIDENTS, INCIDENT, errors=ERRORS
    ),
    "status.update_incident": Operation(
        "Change an open incident's status, severity or message",
        INCIDENTS,
        INCIDENT,
        request=closed((), status=INCIDENT_STATUS, severity=SEVERITY, message=TEXT),
        errors=CONFLICTS,
    ),
    "status.resolve_incident": Operation(
        "Resolve an open incident (maintenance: complete it)",
        INCIDENTS,
        INCIDENT,
        request=closed((), message=TEXT),
        body_required=False,
        errors=CONFLICTS,
    ),
}

CONDITION = all_required(
    metric={
        "enum": [
            "request_count",
            "error_rate",
            "latency_p50",
            "latency_p99",
            "token_usage",
            "cost",
        ]
    },
    operator={"enum": ["gt", "gte", "lt", "lte"]},
    threshold=NUM,
    window_minutes={"type": "integer", "minimum": 1, "maximum": 10080},
)
ALERT_EVENT = all_required(
    kind=STR,
    value=nullable(NUM),
    email_status=STR,
    created_at=DATE_TIME,
)
ALERT = obj(
    (
        "id",
        "object",
        "name",
        "condition",
        "notify",
        "state",
        "last_value",
        "last_evaluated_at",
        "last_changed_at",
        "created_at",
    ),
    id=STR,
    object={"const": "alert"},
    name=STR,
    condition=CONDITION,
    notify=all_required(email=STRS, webhook=nullable(STR)),
    state={"enum": ["ok", "firing"]},
    last_value=nullable(NUM),
    last_evaluated_at=TIME,
    last_changed_at=TIME,
    created_at=DATE_TIME,
    events=arr(ALERT_EVENT),
    deliveries=arr(DELIVERY),
)
ALERT_REQUEST = closed(
    ("name", "condition", "notify"),
    name=NAME,
    condition=CONDITION | {"additionalProperties": False},
    notify=closed(
        (),
        email=arr({"type": "string", "format": "email"}, maxItems=20),
        webhook={"type": "string", "maxLength": 2048},
    ),
)

ALERT_OPERATIONS = {
    "alerts.list_alerts": Operation("Usage alerts", ALERTS, listing(ALERT), errors=ERRORS),
    "alerts.create_alert": Operation(
        "Create a usage alert; a webhook's signing secret is in this answer only",
        ALERTS,
        {"allOf": [ALERT, obj(webhook_secret=STR)]},
        status=201,
        request=ALERT_REQUEST,
        errors=CONFLICTS,
    ),
    "alerts.read_alert": Operation(
        "One alert with its events and webhook deliveries", ALERTS, ALERT, errors=ERRORS
    ),
    "alerts.delete_alert": Operation("Delete an alert", ALERTS, deleted("alert"), errors=ERRORS),
}

SLA_REQUEST = all_required(
    id=STR,
    object={"const": "sla_credit_request"},
    period=STR,
    incident_ids=STRS,
    description=STR,
    plan={"enum": ["free", "pro", "enterprise"]},
    sla_target_percent=nullable(NUM),
    measured_uptime_percent=NUM,
    downtime_minutes=NUM,
    credit_percent=NUM,
    status={"enum": ["approved", "not_eligible"]},
    created_at=DATE_TIME,
)

BILLING_OPERATIONS = {
    "billing.create_sla_credit": Operation(
        "Request an SLA credit for a month; uptime and credit are computed at once",
        BILLING,
        SLA_REQUEST,
        status=201,
        request=closed(
            ("period",),
            period={"type": "string", "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])$"},
            incident_ids=STRS,
            description=TEXT,
        ),
        errors=ERRORS,
    ),
    "billing.read_sla_credit": Operation(
        "One SLA-credit request", BILLING, SLA_REQUEST, errors=ERRORS
    ),
}

OPERATIONS = {
    **STATUS_OPERATIONS,
    **INCIDENT_OPERATIONS,
    **ALERT_OPERATIONS,
    **BILLING_OPERATIONS,
}
