"""Validation of the status family's request bodies into plain attrs values.

Every mistake is a 400 `invalid_request` naming the parameter (`param`) and the value;
unknown fields are refused, so a misspelt option is not silently ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from gateway.kernels.webhooks.hub import STATUS_EVENTS
from gateway.platform.errors import invalid_request
from gateway.platform.params import body_object, optional_string, required_string
from gateway.status.alert_rules import METRICS, OPERATORS
from gateway.status.incidents import INCIDENT_STATUSES, MAINTENANCE_STATUSES, SEVERITIES
from gateway.status.sla import month_bounds

MAX_TEXT = 2000
MAX_NAME = 200
MAX_URL = 2048
MAX_EMAILS = 20
MAX_SERVICES = 20
MAX_WINDOW_MINUTES = 7 * 24 * 60
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PERIOD = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


@attrs.frozen
class WebhookSpec:
    url: str
    events: tuple[str, ...]


@attrs.frozen
class IncidentSpec:
    title: str
    severity: str
    status: str
    message: str
    affected_services: tuple[str, ...]


@attrs.frozen
class IncidentChange:
    status: str | None
    severity: str | None
    message: str | None


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
    period: str
    incident_ids: tuple[str, ...]
    description: str


def _only(body: Mapping[str, Any], allowed: tuple[str, ...], prefix: str = "") -> None:
    for name in body:
        if name not in allowed:
            raise invalid_request(f"Unknown field '{prefix}{name}'.", param=prefix + name)


def _bounded_text(body: Mapping[str, Any], name: str, limit: int, *, required: bool) -> str:
    value = required_string(body, name) if required else optional_string(body, name) or ""
    if len(value) > limit:
        raise invalid_request(f"'{name}' is longer than {limit} characters.", param=name)
    return value


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_request(f"'{name}' must be an array of strings.", param=name, value=value)
    return tuple(dict.fromkeys(value))


def parse_webhook(raw: Any) -> WebhookSpec:
    body = body_object(raw)
    _only(body, ("url", "events"))
    url = _bounded_text(body, "url", MAX_URL, required=True)
    events = _strings(body.get("events"), "events")
    if not events:
        raise invalid_request(
            "'events' must name at least one event.", param="events", value=list(events)
        )
    unknown = [e for e in events if e not in STATUS_EVENTS]
    if unknown:
        raise invalid_request(
            f"Unknown events {unknown}; use {list(STATUS_EVENTS)}.", param="events", value=unknown
        )
    return WebhookSpec(url, events)


def _choice(body: Mapping[str, Any], name: str, choices: tuple[str, ...]) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if value not in choices:
        raise invalid_request(f"'{name}' must be one of {list(choices)}.", param=name, value=value)
    return str(value)


def parse_incident(raw: Any) -> IncidentSpec:
    body = body_object(raw)
    _only(body, ("title", "severity", "status", "message", "affected_services"))
    severity = _choice(body, "severity", SEVERITIES)
    if severity is None:
        raise invalid_request("'severity' is required.", param="severity")
    statuses = MAINTENANCE_STATUSES if severity == "maintenance" else INCIDENT_STATUSES
    status = _choice(body, "status", statuses[:-1]) or statuses[0]
    services = _strings(body.get("affected_services", ["api"]), "affected_services")
    if (
        not services
        or len(services) > MAX_SERVICES
        or any(not 0 < len(name) <= MAX_NAME for name in services)
    ):
        raise invalid_request(
            f"'affected_services' holds 1 to {MAX_SERVICES} names of up to {MAX_NAME} characters.",
            param="affected_services",
            value=list(services),
        )
    return IncidentSpec(
        title=_bounded_text(body, "title", MAX_NAME, required=True),
        severity=severity,
        status=status,
        message=_bounded_text(body, "message", MAX_TEXT, required=False),
        affected_services=services,
    )


def parse_incident_change(raw: Any, current_severity: str) -> IncidentChange:
    body = body_object(raw)
    _only(body, ("status", "severity", "message"))
    severity = _choice(body, "severity", SEVERITIES)
    if severity is not None and (severity == "maintenance") != (current_severity == "maintenance"):
        # The two kinds have different statuses and events: crossing would leave, say, a
        # `minor` incident `in_progress` and send `maintenance.completed` for an outage.
        raise invalid_request(
            f"A '{current_severity}' incident cannot become '{severity}': maintenance and "
            "outages are separate incidents; resolve this one and open another.",
            param="severity",
            value=severity,
        )
    kind = severity or current_severity
    statuses = MAINTENANCE_STATUSES if kind == "maintenance" else INCIDENT_STATUSES
    change = IncidentChange(
        status=_choice(body, "status", statuses[:-1]),
        severity=severity,
        message=_bounded_text(body, "message", MAX_TEXT, required=False) or None,
    )
    if change == IncidentChange(None, None, None):
        raise invalid_request("Give at least one of 'status', 'severity', 'message'.")
    return change


def parse_resolution(raw: Any) -> str:
    body = body_object(raw)
    _only(body, ("message",))
    return _bounded_text(body, "message", MAX_TEXT, required=False)


def parse_alert(raw: Any) -> AlertSpec:
    body = body_object(raw)
    _only(body, ("name", "condition", "notify"))
    condition = _object(body, "condition")
    _only(condition, ("metric", "operator", "threshold", "window_minutes"), "condition.")
    notify = _object(body, "notify")
    _only(notify, ("email", "webhook"), "notify.")
    emails = _emails(notify.get("email", []))
    webhook = notify.get("webhook")
    if webhook is not None and (not isinstance(webhook, str) or len(webhook) > MAX_URL):
        raise invalid_request("'notify.webhook' must be a URL.", param="notify.webhook")
    if not emails and webhook is None:
        raise invalid_request("'notify' needs an 'email' array or a 'webhook'.", param="notify")
    return AlertSpec(
        name=_bounded_text(body, "name", MAX_NAME, required=True),
        metric=_required_choice(condition, "metric", METRICS),
        operator=_required_choice(condition, "operator", tuple(OPERATORS)),
        threshold=_threshold(condition.get("threshold")),
        window_minutes=_window(condition.get("window_minutes")),
        emails=emails,
        webhook=webhook,
    )


def _object(body: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = body.get(name)
    if not isinstance(value, dict):
        raise invalid_request(f"'{name}' must be an object.", param=name, value=value)
    return value


def _required_choice(body: Mapping[str, Any], name: str, choices: tuple[str, ...]) -> str:
    value = body.get(name)
    if value not in choices:
        raise invalid_request(
            f"'condition.{name}' must be one of {list(choices)}.",
            param=f"condition.{name}",
            value=value,
        )
    return str(value)


def _threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid_request(
            "'condition.threshold' must be a number.", param="condition.threshold", value=value
        )
    return float(value)


def _window(value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_WINDOW_MINUTES
    ):
        raise invalid_request(
            f"'condition.window_minutes' must be an integer from 1 to {MAX_WINDOW_MINUTES}.",
            param="condition.window_minutes",
            value=value,
        )
    return value


def _emails(value: Any) -> tuple[str, ...]:
    emails = _strings(value, "notify.email")
    bad = [e for e in emails if not _EMAIL.match(e) or len(e) > 254]
    if bad:  # said apart from the count: "up to 20" read as the fault for one bad address
        raise invalid_request(
            f"'notify.email' holds what is not an email address: {', '.join(bad)[:200]}.",
            param="notify.email",
            value=value,
        )
    if len(emails) > MAX_EMAILS:
        raise invalid_request(
            f"'notify.email' must hold up to {MAX_EMAILS} email addresses.",
            param="notify.email",
            value=len(emails),
        )
    return emails


def parse_sla_request(raw: Any) -> SlaSpec:
    body = body_object(raw)
    _only(body, ("period", "incident_ids", "description"))
    period = required_string(body, "period")
    if not _PERIOD.match(period) or not _representable(period):
        raise invalid_request("'period' must be a month, YYYY-MM.", param="period", value=period)
    ids = _strings(body.get("incident_ids", []), "incident_ids")
    return SlaSpec(period, ids, _bounded_text(body, "description", MAX_TEXT, required=False))


def _representable(period: str) -> bool:
    """Whether the month and the next one's start are dates Python can hold: the pattern
    lets through years 0000 and 9999-12, whose bounds would fail later as a 500."""
    try:
        month_bounds(period)
    except ValueError:
        return False
    return True
