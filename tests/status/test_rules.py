"""The pure cores of the status family, as tables: incident transitions, alert metrics and
transitions, SLA downtime and credits, maintenance windows, signatures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.kernels.webhooks.hub import StatusEvent, StatusHub
from gateway.kernels.webhooks.signing import new_secret, signature_header, verify
from gateway.status import alert_rules, maintenance, sla
from gateway.status.incidents import Action, Signal, Thresholds, classify, decide, event_name
from store.usage import WindowFigures

T = Thresholds(down_after=3, degraded_after=2, window=5, recover_after=2)
F, K = False, True


@pytest.mark.parametrize(
    ("probes", "signal"),
    [
        ([], Signal.HOLD),
        ([K], Signal.HOLD),
        ([F, F], Signal.DEGRADED),
        ([K, K, F, F, F], Signal.DOWN),
        ([F, F, F, K], Signal.DEGRADED),
        ([F, F, F, K, K], Signal.HEALTHY),
        ([K, F, K, K, K], Signal.HEALTHY),
        ([K, K, K, K, F], Signal.HOLD),
        ([F, K, F, K, F], Signal.DEGRADED),
    ],
)
def test_classify(probes: list[bool], signal: Signal) -> None:
    assert classify(probes, T) is signal


@pytest.mark.parametrize(
    ("severity", "signal", "action"),
    [
        (None, Signal.DOWN, Action.OPEN_MAJOR),
        (None, Signal.DEGRADED, Action.OPEN_MINOR),
        (None, Signal.HEALTHY, Action.NOTHING),
        (None, Signal.HOLD, Action.NOTHING),
        ("minor", Signal.DOWN, Action.ESCALATE),
        ("minor", Signal.DEGRADED, Action.NOTHING),
        ("minor", Signal.HEALTHY, Action.RESOLVE),
        ("major", Signal.DEGRADED, Action.NOTHING),
        ("major", Signal.DOWN, Action.NOTHING),
        ("major", Signal.HEALTHY, Action.RESOLVE),
        ("major", Signal.HOLD, Action.NOTHING),
    ],
)
def test_decide(severity: str | None, signal: Signal, action: Action) -> None:
    assert decide(severity, signal) is action


@pytest.mark.parametrize(
    ("severity", "change", "status", "previous", "event"),
    [
        ("major", "created", "investigating", None, "incident.created"),
        ("minor", "updated", "identified", "investigating", "incident.updated"),
        ("critical", "resolved", "resolved", "monitoring", "incident.resolved"),
        ("maintenance", "created", "scheduled", None, "maintenance.scheduled"),
        ("maintenance", "updated", "in_progress", "scheduled", "maintenance.started"),
        ("maintenance", "resolved", "completed", "in_progress", "maintenance.completed"),
        # a window opened already running starts (it was announced as scheduled)
        ("maintenance", "created", "in_progress", None, "maintenance.started"),
        # a message while it runs does not start it again
        ("maintenance", "updated", "in_progress", "in_progress", "incident.updated"),
    ],
)
def test_event_names(
    severity: str, change: str, status: str, previous: str | None, event: str
) -> None:
    assert event_name(severity, change, status, previous) == event


FIGURES = WindowFigures(
    requests=4, errors=1, tokens=120, cost_usd=0.25, latency_p50_ms=20.0, latency_p99_ms=30.0
)
EMPTY = WindowFigures(requests=0, errors=0, tokens=0, cost_usd=0.0)


@pytest.mark.parametrize(
    ("metric", "value", "empty"),
    [
        ("request_count", 4.0, 0.0),
        ("error_rate", 0.25, None),
        ("latency_p50", 20.0, None),
        ("latency_p99", 30.0, None),
        ("token_usage", 120.0, 0.0),
        ("cost", 0.25, 0.0),
    ],
)
def test_metric_values(metric: str, value: float, empty: float | None) -> None:
    assert alert_rules.metric_value(metric, FIGURES) == value
    assert alert_rules.metric_value(metric, EMPTY) == empty


@pytest.mark.parametrize(
    ("op", "value", "result"),
    [
        ("gt", 5, False),
        ("gte", 5, True),
        ("lt", 5, False),
        ("lte", 5, True),
        ("gt", 6, True),
        ("lt", 4, True),
        ("gt", None, False),
        ("lt", None, False),
    ],
)
def test_operators(op: str, value: float | None, result: bool) -> None:
    assert alert_rules.holds(op, value, 5.0) is result


@pytest.mark.parametrize(
    ("state", "condition", "change"),
    [
        ("ok", True, ("firing", "alert.triggered")),
        ("ok", False, None),
        ("firing", True, None),
        ("firing", False, ("ok", "alert.resolved")),
    ],
)
def test_alert_transitions(state: str, condition: bool, change: tuple[str, str] | None) -> None:
    assert alert_rules.transition(state, condition) == change


START = datetime(2026, 9, 1, tzinfo=UTC)
END = datetime(2026, 10, 1, tzinfo=UTC)
H = timedelta(hours=1)


def test_downtime_counts_overlaps_once_and_ignores_minor_and_maintenance() -> None:
    outages = [
        sla.Outage(START + H, START + 3 * H, "major"),
        sla.Outage(START + 2 * H, START + 4 * H, "critical"),  # overlaps by one hour
        sla.Outage(START + 10 * H, START + 20 * H, "minor"),
        sla.Outage(START + 30 * H, START + 40 * H, "maintenance"),
        sla.Outage(START - 5 * H, START + H / 2, "major"),  # starts before the month
        sla.Outage(END - H, None, "major"),  # still open: counted to the period's end
    ]
    assert sla.downtime_seconds(outages, START, END) == (3 + 0.5 + 1) * 3600


@pytest.mark.parametrize(
    ("plan", "uptime", "credit"),
    [
        ("pro", 100.0, 0.0),
        ("pro", 99.9, 0.0),
        ("pro", 99.89, 10.0),
        ("pro", 98.9, 25.0),
        ("pro", 94.0, 50.0),
        ("enterprise", 99.99, 0.0),
        ("enterprise", 99.95, 10.0),
        ("enterprise", 99.5, 25.0),
        ("enterprise", 98.0, 50.0),
        ("free", 50.0, 0.0),
    ],
)
def test_credit_table(plan: str, uptime: float, credit: float) -> None:
    assert sla.credit_percent(plan, uptime) == credit


def test_assess_a_month_with_two_hours_down() -> None:
    result = sla.assess("pro", [sla.Outage(START, START + 2 * H, "major")], START, END)
    assert result.uptime_percent == round(100 * (1 - 2 / (30 * 24)), 4)  # 99.7222
    assert result.downtime_minutes == 120.0
    assert result.credit_percent == 10.0
    assert result.status == "approved"
    assert sla.assess("free", [], START, END).status == "not_eligible"


def test_month_bounds() -> None:
    assert sla.month_bounds("2026-12") == (
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=UTC),
    )


def test_maintenance_windows_are_sunday_and_wednesday_two_to_four() -> None:
    wednesday_3am = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
    windows = maintenance.upcoming(wednesday_3am, weeks=1)
    assert [(w.kind, w.starts_at, w.status(wednesday_3am)) for w in windows] == [
        ("backup", datetime(2026, 11, 25, 2, 0, tzinfo=UTC), "in_progress"),
        ("primary", datetime(2026, 11, 29, 2, 0, tzinfo=UTC), "scheduled"),
    ]
    assert all(w.ends_at - w.starts_at == 2 * H for w in windows)


def test_signatures_verify_only_with_the_secret_the_body_and_a_fresh_time() -> None:
    secret = new_secret()
    header = signature_header(secret, 1_700_000_000, b'{"a":1}')
    assert verify(secret, header, b'{"a":1}', now=1_700_000_010)
    assert not verify(secret, header, b'{"a":2}', now=1_700_000_010)
    assert not verify(new_secret(), header, b'{"a":1}', now=1_700_000_010)
    assert not verify(secret, header, b'{"a":1}', now=1_700_000_000 + 301)
    assert not verify(secret, "v1=abc", b'{"a":1}', now=1_700_000_000)


def test_the_hub_never_blocks_a_producer() -> None:
    hub = StatusHub(capacity=2)
    event = StatusEvent("default", "incident.created", {})
    assert [hub.publish(event) for _ in range(3)] == [True, True, False]
    assert hub.dropped == 1
    assert hub.receive.receive_nowait() == event
