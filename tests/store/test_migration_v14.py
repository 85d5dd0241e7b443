"""Migrations 14 and 17: rollups and latency sketches of the rows written before them are
built by the migrations' SQL, and equal what the usage writer's own path builds for the same
rows."""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlite_utils

from store import usage, usage_rollups
from store.migrations import MIGRATIONS, apply_migrations
from tests.gateway.analytics.usage_set import build_rows


def _fresh() -> sqlite_utils.Database:
    return sqlite_utils.Database(sqlite3.connect(":memory:"))


def _tables(db: sqlite_utils.Database) -> tuple[list[Any], list[Any]]:
    rollups = db.execute(
        "SELECT 'hour', * FROM usage_rollups UNION ALL SELECT 'day', * FROM usage_rollups_daily "
        "ORDER BY 1, 2, 3, 4, 5, 6, 7"
    ).fetchall()
    rollups += db.execute("SELECT 'hourly', * FROM usage_rollups_hourly ORDER BY 1, 2, 3, 4, 5, 6")
    sketch = db.execute("SELECT * FROM usage_latency_days ORDER BY 1, 2, 3").fetchall()
    return rollups, sketch


def _rounded(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows]


def test_the_migration_builds_the_rollups_the_writer_would() -> None:
    # Rows of before version 14 carry no cache savings.
    rows = [r._replace(cache_savings_usd=0.0) for r in build_rows(("k1", "k2"), 300)]
    old = _fresh()
    apply_migrations(old, MIGRATIONS[:13])
    later = ("cache_savings_usd", "agent_session")  # columns of versions 14 and after
    names = [n.strip() for n in usage._COLUMNS.split(",") if n.strip() not in later]
    with old.atomic():
        for record in rows:
            row = usage._to_row(record)
            old.execute(
                f"INSERT INTO usage_records ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})",
                [row[name] for name in names],
            )
    assert apply_migrations(old, MIGRATIONS[:14]) == [14]
    apply_migrations(old)

    new = _fresh()
    apply_migrations(new)
    usage.insert_records(new, rows)

    old_rollups, old_sketch = _tables(old)
    new_rollups, new_sketch = _tables(new)
    assert len(old_rollups) > 50 and len(old_sketch) > 10
    assert _rounded(old_rollups) == _rounded(new_rollups)
    assert old_sketch == new_sketch


def test_rollups_add_up_across_batches() -> None:
    rows = build_rows(("k1",), 200)
    whole, split = _fresh(), _fresh()
    apply_migrations(whole)
    apply_migrations(split)
    usage.insert_records(whole, rows)
    for start in range(0, len(rows), 37):
        usage.insert_records(split, rows[start : start + 37])
    assert _rounded(_tables(whole)[0]) == _rounded(_tables(split)[0])
    assert _tables(whole)[1] == _tables(split)[1]
    for table in ("usage_rollups", "usage_rollups_daily"):
        total = whole.execute(f"SELECT sum(requests) FROM {table}").fetchone()[0]
        assert total == len(rows)


def test_a_rebuild_from_the_raw_rows_equals_what_the_writer_kept() -> None:
    db = _fresh()
    apply_migrations(db)
    usage.insert_records(db, build_rows(("k1", "k2"), 300))
    kept = _tables(db)
    usage_rollups.rebuild(db)
    rebuilt = _tables(db)
    assert _rounded(rebuilt[0]) == _rounded(kept[0])
    assert rebuilt[1] == kept[1]
