"""Migration 3: the (key, endpoint, time) index behind the daily and monthly limits."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import sqlite_utils

from store import usage
from store.migrations import MIGRATIONS, apply_migrations, current_version

from .test_usage import make_usage


def _indexes(db: sqlite_utils.Database) -> set[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {str(row[0]) for row in rows}


def test_a_version_2_database_gains_the_index_and_keeps_its_rows() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        assert apply_migrations(db, MIGRATIONS[:2]) == [1, 2]
        usage.insert_records(db, [make_usage(1), make_usage(2, endpoint="embeddings")])
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
