"""Migration 17: the per-bucket latency rows of version 14 become one sketch BLOB per day
and provider holding the same counts; the key-less hourly rollups sum the keyed ones; and
the pages' reads go through the primary keys in the order they group (no sort)."""

from __future__ import annotations

import sqlite3

import sqlite_utils

from store import analytics, latency_sketch, usage
from store.migrations import MIGRATIONS, apply_migrations
from tests.gateway.analytics.usage_set import build_rows


def _at_version_14() -> sqlite_utils.Database:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    assert apply_migrations(db, MIGRATIONS[:13]) == list(range(1, 14))
    later = ("cache_savings_usd", "agent_session")  # columns of versions 14 and after
    names = [n.strip() for n in usage._COLUMNS.split(",") if n.strip() not in later]
    with db.atomic():
        for record in build_rows(("k1", "k2"), 300):
            row = usage._to_row(record)
            db.execute(
                f"INSERT INTO usage_records ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})",
                [row[name] for name in names],
            )
    assert apply_migrations(db, MIGRATIONS[:14]) == [14]
    return db


def test_the_blobs_hold_the_counts_of_the_bucket_rows() -> None:
    db = _at_version_14()
    old: dict[tuple[str, int, str], dict[int, int]] = {}
    for workspace, day, provider, bucket, count in db.execute(
        "SELECT * FROM usage_latency_sketch"
    ).fetchall():
        slot = 0 if bucket == -1_000_000 else bucket - latency_sketch.MIN_BUCKET + 1
        old.setdefault((workspace, day, provider), {})[slot] = count
    assert apply_migrations(db) == [v for v, _ in MIGRATIONS if v >= 15]  # later ones too
    new = {
        (workspace, day, provider): latency_sketch.merge([blob])
        for workspace, day, provider, blob in db.execute("SELECT * FROM usage_latency_days")
    }
    assert len(new) == len(old) > 10
    for point, counts in old.items():
        assert {int(s): int(c) for s, c in enumerate(new[point]) if c} == counts
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "usage_latency_sketch" not in tables


def test_the_hourly_rollups_without_keys_sum_the_keyed_ones() -> None:
    db = _at_version_14()
    apply_migrations(db)
    keyed = db.execute(
        "SELECT workspace_id, start_epoch, model, sum(requests), sum(cost_usd) "
        "FROM usage_rollups GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()
    hourly = db.execute(
        "SELECT workspace_id, start_epoch, model, sum(requests), sum(cost_usd) "
        "FROM usage_rollups_hourly GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()
    assert len(keyed) > 50
    assert [r[:4] for r in keyed] == [r[:4] for r in hourly]
    assert all(abs(a[4] - b[4]) < 1e-9 for a, b in zip(keyed, hourly, strict=True))


def _plan(db: sqlite_utils.Database, sql: str) -> list[str]:
    return [str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", [0, 0, 0])]


def test_the_pages_read_the_rollups_by_primary_key_without_sorting() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db)
    where = "WHERE workspace_id = ? AND start_epoch >= ? AND start_epoch < ?"
    for table, labels in (
        ("usage_rollups_hourly", "start_epoch, model"),
        ("usage_rollups", "start_epoch, key_id"),
    ):
        sums = ", ".join(analytics.SERIES_SQL)
        plan = _plan(
            db, f"SELECT {labels}, {sums} FROM {table} {where} GROUP BY 1, 2 ORDER BY 1, 2"
        )
        assert plan == [
            f"SEARCH {table} USING PRIMARY KEY (workspace_id=? AND start_epoch>? AND start_epoch<?)"
        ]
    plan = _plan(
        db,
        "SELECT provider, sketch FROM usage_latency_days "
        "WHERE workspace_id = ? AND day_epoch >= ? AND day_epoch < ?",
    )
    assert len(plan) == 1 and "USING INDEX" in plan[0] and "day_epoch>? AND day_epoch<?" in plan[0]
