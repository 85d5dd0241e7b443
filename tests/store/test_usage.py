from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlite_utils

from store import usage, usage_batches
from store.usage import UsageRecord, UsageTotals

from .conftest import T0


def make_usage(n: int = 0, **overrides: Any) -> UsageRecord:
    fields: dict[str, Any] = {
        "request_id": f"req_{n}",
        "key_id": "key_a",
        "workspace_id": "default",
        "model": "gpt-4o",
        "provider": "openai",
        "endpoint": "chat",
        "status": 200,
        "created_at": T0,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.5,
    }
    fields.update(overrides)
    return UsageRecord(**fields)


def test_round_trip(sdb: sqlite_utils.Database) -> None:
    record = make_usage(
        latency_ms=123.5,
        energy_kwh=0.001,
        carbon_gco2e=0.4,
        error_code=None,
        cache_hit=True,
        project="p",
        team="t",
        tags=("a", "b"),
    )
    assert usage.insert_records(sdb, [record]) == 1
    assert usage.list_for_request(sdb, "req_0") == [record]


def test_epoch_column_matches_created_at(sdb: sqlite_utils.Database) -> None:
    usage.insert_records(sdb, [make_usage()])
    row = sdb.execute("SELECT created_at, created_epoch FROM usage_records").fetchone()
    assert row == ("2025-03-01T12:00:00.123456+00:00", T0.timestamp())


def test_totals_since_filters(sdb: sqlite_utils.Database) -> None:
    usage.insert_records(
        sdb,
        [
            make_usage(1, created_at=T0 - timedelta(seconds=1)),  # before the window
            make_usage(2),
            make_usage(3, status=502, prompt_tokens=0, completion_tokens=0, cost_usd=0.0),
            make_usage(4, key_id="key_b", provider="anthropic", cost_usd=1.25),
            make_usage(5, workspace_id="ws_other", key_id="key_c"),
        ],
    )
    assert usage.totals_since(sdb, since=T0, key_id="key_a") == UsageTotals(2, 15, 0.5)
    assert usage.totals_since(sdb, since=T0, workspace_id="default") == UsageTotals(3, 30, 1.75)
    assert usage.totals_since(
        sdb, since=T0, workspace_id="default", provider="anthropic"
    ) == UsageTotals(1, 15, 1.25)
    assert usage.totals_since(sdb, since=T0 + timedelta(days=1)) == UsageTotals(0, 0, 0.0)


def test_request_counts_of_a_day_and_its_month(sdb: sqlite_utils.Database) -> None:
    now = T0 + timedelta(days=14)  # 2025-03-15, noon
    day, month = datetime(2025, 3, 15, tzinfo=UTC), datetime(2025, 3, 1, tzinfo=UTC)
    usage.insert_records(
        sdb,
        [
            make_usage(1, created_at=month - timedelta(microseconds=1)),  # last month
            make_usage(2, created_at=month),  # the month's first instant
            make_usage(3, created_at=day - timedelta(microseconds=1)),  # yesterday
            make_usage(4, created_at=day),
            make_usage(5, created_at=now, status=502),  # a failed request still counts
            make_usage(6, created_at=now, endpoint="embeddings"),  # not an endpoint asked for
            make_usage(7, created_at=now, key_id="key_b"),
            # refused by the limits: recorded for analytics, never admitted
            make_usage(8, created_at=now, status=429, error_code="rate_limit_exceeded"),
        ],
    )

    def counts(*endpoints: str) -> usage.RequestCounts:
        return usage.request_counts(
            sdb, "key_a", day_start=day, month_start=month, endpoints=endpoints
        )

    assert counts("chat") == usage.RequestCounts(daily=2, monthly=4)
    assert counts("chat", "embeddings") == usage.RequestCounts(daily=3, monthly=5)
    assert counts() == usage.RequestCounts(0, 0)


def test_range_queries_use_the_indexes(sdb: sqlite_utils.Database, backend: str) -> None:
    by_key = "SELECT count(*) FROM usage_records WHERE key_id = 'k' AND created_epoch >= 0"
    by_workspace = (
        "SELECT count(*) FROM usage_records WHERE workspace_id = 'w' AND created_epoch >= 0"
    )
    # the daily and monthly limits' count reads the index alone (migration 3)
    limits = (
        "SELECT count(*), count(*) FILTER (WHERE created_epoch >= 5) FROM usage_records "
        "WHERE key_id = 'k' AND endpoint IN ('chat') AND created_epoch >= 0"
    )
    if backend == "postgres":
        # An empty table: ask which index serves each query when one can.
        sdb.execute("SET enable_seqscan = off")

        def plan(sql: str) -> str:
            return " ".join(str(row[0]) for row in sdb.execute("EXPLAIN " + sql).fetchall())

        assert "Index" in plan(by_key) and "on usage_records" in plan(by_key)
        assert "usage_by_workspace" in plan(by_workspace)
        assert "Index Only Scan using usage_by_key_endpoint_time" in plan(limits)
        return

    def sqlite_plan(sql: str) -> str:
        return " ".join(str(row[-1]) for row in sdb.execute("EXPLAIN QUERY PLAN " + sql))

    assert "usage_by_key_time" in sqlite_plan(by_key)
    assert "usage_by_workspace_time" in sqlite_plan(by_workspace)
    assert "COVERING INDEX usage_by_key_endpoint_time" in sqlite_plan(limits)


def test_naive_since_is_refused(sdb: sqlite_utils.Database) -> None:
    with pytest.raises(ValueError, match="naive"):
        usage.totals_since(sdb, since=T0.replace(tzinfo=None))


def test_a_batch_id_is_written_once(sdb: sqlite_utils.Database) -> None:
    """The usage writer sends an unanswered batch again under the same id (issue 37):
    the second time writes nothing, neither rows nor rollups nor log entries."""
    batch = [make_usage(n, request_log=True) for n in range(3)]
    assert usage.insert_records(sdb, batch, batch_id="w.1") == 3
    assert usage.insert_records(sdb, batch, batch_id="w.1") == 0
    assert usage.insert_records(sdb, batch[:1], batch_id="w.2") == 1
    counts = [
        sdb.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("usage_records", "request_log", "usage_batches")
    ]
    assert counts == [4, 4, 2]
    assert sdb.execute("SELECT sum(requests) FROM usage_rollups").fetchone()[0] == 4


def test_old_batch_ids_are_forgotten(sdb: sqlite_utils.Database) -> None:
    now = T0.timestamp()
    with sdb.atomic():
        usage_batches.claim(sdb, "old", now=now - usage_batches.KEEP_S - 1)
        usage_batches.claim(sdb, "recent", now=now - 60)
    assert usage_batches.forget_old(sdb, now=now) == 1
    ids = [row[0] for row in sdb.execute("SELECT id FROM usage_batches")]
    assert ids == ["recent"]
