"""The worker that evaluates every usage alert over its sliding window.

Every `alert_eval_interval_s` each alert's metric is computed from the workspace's usage
records of the last `window_minutes` (`store.usage.window_figures`); when the alert's
svc changes (`gateway.status.alert_rules.transition`) it notifies once: a signed webhook
through the delivery worker, an email through SMTP, and an event in the alert's history.
Unchanged states send nothing, so a lasting condition is one notification, not a storm.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import trio

from gateway.kernels.webhooks.notify import alert_delivery
from gateway.status import alert_rules, mail, render
from store import alerts as alert_store
from store import usage as usage_store
from store.alerts import AlertRecord

if TYPE_CHECKING:
    from gateway.status.services import StatusServices

SMTP_THREADS = 2


async def run(
    svc: StatusServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Evaluate every interval until cancelled (0 turns the evaluator off)."""
    interval = svc.settings.alert_eval_interval_s
    limiter = trio.CapacityLimiter(SMTP_THREADS)
    task_status.started()
    if interval <= 0:
        return
    while True:
        await trio.sleep(interval)
        await evaluate_all(svc, datetime.now(UTC), limiter)


def smtp_settings(svc: StatusServices) -> mail.SmtpSettings:
    s = svc.settings
    return mail.SmtpSettings(s.smtp_host, s.smtp_port, s.smtp_from, s.smtp_timeout_s)


async def evaluate_all(svc: StatusServices, now: datetime, limiter: trio.CapacityLimiter) -> None:
    """One pass over every alert, in creation order."""
    for record in await svc.db.run(alert_store.list_alerts):
        await evaluate(svc, record, now, limiter)


async def evaluate(
    svc: StatusServices, record: AlertRecord, now: datetime, limiter: trio.CapacityLimiter
) -> str | None:
    """Evaluate one alert; returns the event sent (`alert.triggered`/`alert.resolved`) or
    None when its svc did not change."""
    since = now - timedelta(minutes=record.window_minutes)
    figures = await svc.db.run(
        lambda d: usage_store.window_figures(
            d, workspace_id=record.workspace_id, since=since, until=now
        )
    )
    value = alert_rules.metric_value(record.metric, figures)
    change = alert_rules.transition(
        record.state, alert_rules.holds(record.operator, value, record.threshold)
    )
    if change is None:
        await svc.db.run(
            lambda d: alert_store.record_evaluation(d, record.id, value=value, now=now)
        )
        return None
    next_state, event = change
    payload = render.alert_payload(event, record, value, now)
    if record.notify_webhook and record.encrypted_secret:
        await alert_delivery(
            svc.webhooks,
            workspace_id=record.workspace_id,
            alert_id=record.id,
            url=record.notify_webhook,
            encrypted_secret=record.encrypted_secret,
            event=event,
            payload=payload,
            now=now,
        )
    mailed = await mail.send(
        smtp_settings(svc), record.notify_email, _subject(event, record), _text(payload), limiter
    )
    kind = event.removeprefix("alert.")
    await svc.db.run(
        lambda d: alert_store.record_transition(
            d, record.id, state=next_state, kind=kind, value=value, email_status=mailed, now=now
        )
    )
    return event


def _subject(event: str, record: AlertRecord) -> str:
    word = "triggered" if event == "alert.triggered" else "resolved"
    return f"[gateway] Alert {word}: {record.name}"


def _text(payload: dict[str, object]) -> str:
    alert = payload["alert"]
    assert isinstance(alert, dict)
    return (
        f"{payload['event']} at {payload['timestamp']}\n"
        f"{alert['metric']} over the last {alert['window_minutes']} minutes is "
        f"{alert['value']} ({alert['operator']} {alert['threshold']}).\n"
    )
