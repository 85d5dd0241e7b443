"""The status family's request bodies, declared: one attrs class per body, from which
both the OpenAPI document's schema and the server's checks come
(`gateway.platform.shapes`). What a declaration cannot say (a status that depends on the
incident's current severity, the services a workspace has) is checked after, here or in
the service.

Every mistake is a 400 naming the parameter (`param`) and the value; unknown fields are
refused, so a misspelt option is not silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs

from gateway.kernels.webhooks.hub import STATUS_EVENTS
from gateway.platform.errors import ApiError
from gateway.platform.shapes import (
    EMAIL,
    NON_BLANK,
    Choices,
    Count,
    Doc,
    Length,
    Pattern,
    Range,
    needs_fields,
    parse,
)
from gateway.status.alert_rules import METRICS, OPERATORS
from gateway.status.incidents import INCIDENT_STATUSES, MAINTENANCE_STATUSES, SEVERITIES

MAX_TEXT = 2000
MAX_NAME = 200
MAX_URL = 2048
MAX_EMAILS = 20
MAX_SERVICES = 20
MAX_WINDOW_MINUTES = 7 * 24 * 60

Name = Annotated[str, NON_BLANK, Length(most=MAX_NAME)]
Text = Annotated[str, Length(most=MAX_TEXT)]
Url = Annotated[
    str, Pattern(r"^[Hh][Tt][Tt][Pp][Ss]?://", "an http or https URL"), Length(most=MAX_URL)
]
Email = Annotated[str, EMAIL, Length(most=254)]
# A month a credit can be computed for: the years 0000 and 9999-12 have no bounds
# Python can hold (the month's end is the next month's start).
Month = Annotated[
    str,
    Pattern(r"^(?!0000-)(?!9999-12)[0-9]{4}-(0[1-9]|1[0-2])$", "a month, YYYY-MM"),
    Doc("YYYY-MM"),
]
Event = Annotated[str, Choices(STATUS_EVENTS)]


@attrs.frozen
class WebhookSpec:
    """A status webhook subscription."""

    url: Annotated[Url, Doc("Where events are POSTed (checked against internal addresses)")]
    events: Annotated[tuple[Event, ...], Count(least=1)]


ServiceName = Annotated[str, Length(least=1, most=MAX_NAME)]
Services = Annotated[
    tuple[ServiceName, ...],
    Count(least=1, most=MAX_SERVICES),
    Doc("`api` or provider ids"),
]


@attrs.frozen
class OutageBody:
    """An incident: an outage or degradation of some services."""

    title: Name
    severity: Literal["critical", "major", "minor"]
    status: Literal["investigating", "identified", "monitoring"] | None = None
    message: Text | None = None
    affected_services: Services = ("api",)


@attrs.frozen
class MaintenanceBody:
    """Announced maintenance (its statuses are a maintenance window's)."""

    title: Name
    severity: Literal["maintenance"]
    status: Literal["scheduled", "in_progress"] | None = None
    message: Text | None = None
    affected_services: Services = ("api",)


IncidentBody = OutageBody | MaintenanceBody


@attrs.frozen
class IncidentSpec:
    title: str
    severity: str
    status: str
    message: str
    affected_services: tuple[str, ...]


OpenStatus = Annotated[str, Choices((*INCIDENT_STATUSES[:-1], *MAINTENANCE_STATUSES[:-1]))]


@needs_fields(1)
@attrs.frozen
class IncidentChange:
    """A change to an open incident: at least one of its fields. An outage stays an
    outage and maintenance stays maintenance."""

    status: (
        Annotated[str, Choices((*INCIDENT_STATUSES[:-1], *MAINTENANCE_STATUSES[:-1]))] | None
    ) = None
    severity: Annotated[str, Choices(SEVERITIES)] | None = None
    message: Annotated[Text, Length(least=1)] | None = None


@attrs.frozen
class Resolution:
    """The closing note of a resolved incident."""

    message: Text | None = None


@attrs.frozen
class AlertCondition:
    """When the alert fires: `metric` `operator` `threshold` over the last `window_minutes`."""

    metric: Annotated[str, Choices(METRICS)]
    operator: Annotated[str, Choices(tuple(OPERATORS))]
    threshold: float
    window_minutes: Annotated[int, Range(least=1, most=MAX_WINDOW_MINUTES)]


Emails = Annotated[tuple[Email, ...], Count(most=MAX_EMAILS)]


@attrs.frozen
class NotifyByEmail:
    """Whom to tell: email addresses (and a webhook)."""

    email: Annotated[Emails, Count(least=1, most=MAX_EMAILS)]
    webhook: Url | None = None


@attrs.frozen
class NotifyByWebhook:
    """Whom to tell: a webhook (and email addresses)."""

    webhook: Url
    email: Emails = ()


@attrs.frozen
class AlertBody:
    """A usage alert."""

    name: Name
    condition: AlertCondition
    notify: NotifyByEmail | NotifyByWebhook


@attrs.frozen
class AlertSpec:
    name: str
    metric: str
    operator: str
    threshold: float
    window_minutes: int
    emails: tuple[str, ...]
    webhook: str | None


@attrs.frozen
class SlaSpec:
    """A request for an SLA credit for one month."""

    period: Month
    incident_ids: tuple[str, ...] = ()
    description: Text = ""


def parse_webhook(raw: Any) -> WebhookSpec:
    spec = parse(WebhookSpec, raw)
    return attrs.evolve(spec, events=tuple(dict.fromkeys(spec.events)))


def parse_incident(raw: Any) -> IncidentSpec:
    body: OutageBody | MaintenanceBody = parse(IncidentBody, raw)
    statuses = MAINTENANCE_STATUSES if body.severity == "maintenance" else INCIDENT_STATUSES
    return IncidentSpec(
        title=body.title,
        severity=body.severity,
        status=body.status or statuses[0],
        message=body.message or "",
        affected_services=tuple(dict.fromkeys(body.affected_services)),
    )


def parse_incident_change(raw: Any, current_severity: str) -> IncidentChange:
    change = parse(IncidentChange, raw)
    severity = change.severity
    if severity is not None and (severity == "maintenance") != (current_severity == "maintenance"):
        # The two kinds have different statuses and events: crossing would leave, say, a
        # `minor` incident `in_progress` and send `maintenance.completed` for an outage.
        raise ApiError(
            400,
            "invalid_incident_change",
            f"A '{current_severity}' incident cannot become '{severity}': maintenance and "
            "outages are separate incidents; resolve this one and open another.",
            param="severity",
            value=severity,
        )
    kind = severity or current_severity
    statuses = MAINTENANCE_STATUSES if kind == "maintenance" else INCIDENT_STATUSES
    if change.status is not None and change.status not in statuses[:-1]:
        raise ApiError(
            400,
            "invalid_incident_change",
            f"'status' must be one of {list(statuses[:-1])} for a '{kind}' incident.",
            param="status",
            value=change.status,
        )
    return change


def parse_resolution(raw: Any) -> str:
    return parse(Resolution, raw).message or ""


def parse_alert(raw: Any) -> AlertSpec:
    body = parse(AlertBody, raw)
    notify = body.notify
    return AlertSpec(
        name=body.name,
        metric=body.condition.metric,
        operator=body.condition.operator,
        threshold=body.condition.threshold,
        window_minutes=body.condition.window_minutes,
        emails=tuple(dict.fromkeys(notify.email)),
        webhook=notify.webhook,
    )


def parse_sla_request(raw: Any) -> SlaSpec:
    spec = parse(SlaSpec, raw)
    return attrs.evolve(spec, incident_ids=tuple(dict.fromkeys(spec.incident_ids)))
