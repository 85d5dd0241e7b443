"""The status family's store queries: usage windows, medians, incident ranges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlite_utils

from store import incidents, usage
from store.incidents import IncidentRecord
from tests.store.test_usage import make_usage

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
M = timedelta(minutes=1)


def test_window_figures_count_sum_and_rank_latencies(sdb: sqlite_utils.Database) -> None:
    records = [
        make_usage(n, created_at=T + n * M, latency_ms=float(10 * (n + 1)), status=200)
        for n in range(100)
    ]
    records.append(make_usage(100, created_at=T + 5 * M, status=502, latency_ms=1.0))
    records.append(make_usage(101, created_at=T + 5 * M, workspace_id="other"))
    usage.insert_records(sdb, records)
    figures = usage.window_figures(sdb, workspace_id="default", since=T, until=T + 100 * M)
    assert (figures.requests, figures.errors, figures.tokens) == (101, 1, 101 * 15)
    assert round(figures.cost_usd, 6) == round(101 * 0.5, 6)
    assert figures.latency_p50_ms == 500.0  # rank 50 of 100 successes
    assert figures.latency_p99_ms == 990.0  # rank 99
    narrow = usage.window_figures(sdb, workspace_id="default", since=T + 98 * M, until=T + 99 * M)
    assert (narrow.requests, narrow.latency_p50_ms, narrow.latency_p99_ms) == (1, 990.0, 990.0)
    empty = usage.window_figures(sdb, workspace_id="default", since=T - M, until=T)
    assert (empty.requests, empty.latency_p50_ms) == (0, None)


def test_median_latency_by_provider(sdb: sqlite_utils.Database) -> None:
    usage.insert_records(
        sdb,
        [
            make_usage(1, latency_ms=30.0, created_at=T),
            make_usage(2, latency_ms=10.0, created_at=T),
            make_usage(3, latency_ms=20.0, created_at=T),
            make_usage(4, latency_ms=999.0, status=500, created_at=T),
            make_usage(5, latency_ms=5.0, provider="anthropic", created_at=T),
        ],
    )
    median = usage.median_latency_ms
    assert median(sdb, workspace_id="default", provider="openai", since=T) == 20.0
    assert median(sdb, workspace_id="default", provider="anthropic", since=T) == 5.0
    assert median(sdb, workspace_id="default", provider=None, since=T) == 20.0
    assert median(sdb, workspace_id="default", provider="mistral", since=T) is None


def incident(start: datetime, end: datetime | None, ws: str = "default") -> IncidentRecord:
    return IncidentRecord(
        id=incidents.new_incident_id(),
        workspace_id=ws,
        title="t",
        status="investigating" if end is None else "resolved",
        severity="major",
        affected_services=("openai",),
        message="",
        source="monitor",
        created_at=start,
        updated_at=end or start,
        resolved_at=end,
    )


def test_overlapping_and_open_incidents(sdb: sqlite_utils.Database) -> None:
    before = incidents.insert(sdb, incident(T - 10 * M, T - 5 * M))
    across = incidents.insert(sdb, incident(T - 5 * M, T + 5 * M))
    still = incidents.insert(sdb, incident(T + 50 * M, None))
    incidents.insert(sdb, incident(T, T + M, ws="other"))
    found = incidents.overlapping(sdb, "default", start=T, end=T + 60 * M)
    assert [i.id for i in found] == [across.id, still.id]
    assert [i.id for i in incidents.list_open(sdb, "default")] == [still.id]
    assert incidents.get(sdb, before.id, "other") is None
    assert incidents.get(sdb, before.id, "default") == before
