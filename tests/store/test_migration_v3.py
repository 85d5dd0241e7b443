"""Migration 3: the (key, endpoint, time) index behind the daily and monthly limits."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import sqlite_utils

from store import usage
from store.migrations import MIGRATIONS, apply_migrations, current_version
from tests.store.test_usage import make_usage


def _indexes(db: sqlite_utils.Database) -> set[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {str(row[0]) for row in rows}


# The usage columns of schema versions 1 to 3 (version 4 added the metered units).
V1_COLUMNS = (
    "request_id",
    "key_id",
    "workspace_id",
    "model",
    "provider",
    "endpoint",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_ms",
    "energy_kwh",
    "carbon_gco2e",
    "status",
    "error_code",
    "cache_hit",
    "project",
    "team",
    "tags",
    "created_at",
    "created_epoch",
)


def insert_version_1_rows(db: sqlite_utils.Database, records: list[usage.UsageRecord]) -> None:
    """Rows as a gateway of schema 1-3 wrote them."""
    for record in records:
        row = usage._to_row(record)
        marks = ", ".join("?" for _ in V1_COLUMNS)
        db.execute(
            f"INSERT INTO usage_records ({', '.join(V1_COLUMNS)}) VALUES ({marks})",
            [row[name] for name in V1_COLUMNS],
        )


def test_a_version_2_database_gains_the_index_and_keeps_its_rows() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        assert apply_migrations(db, MIGRATIONS[:2]) == [1, 2]
        insert_version_1_rows(db, [make_usage(1), make_usage(2, endpoint="embeddings")])
        assert "usage_by_key_endpoint_time" not in _indexes(db)

        assert apply_migrations(db, MIGRATIONS[:3]) == [3]
        assert current_version(db) == 3
        assert "usage_by_key_endpoint_time" in _indexes(db)
        march = datetime(2025, 3, 1, tzinfo=UTC)
        counts = usage.request_counts(
            db, "key_a", day_start=march, month_start=march, endpoints=("chat",)
        )
        assert counts == usage.RequestCounts(daily=1, monthly=1)
    finally:
        db.close()
