"""Migration 15: usage records keep an agent's session (older rows have none) and one
session's cost is read from the partial index; files keep their uploading agent."""

from __future__ import annotations

import sqlite3

import sqlite_utils

from store import agents, usage
from store.migrations import MIGRATIONS, apply_migrations
from store.migrations import v15_agent_sessions as migration
from tests.store.test_usage import make_usage

VERSION = next(version for version, script in MIGRATIONS if script == migration.SCRIPT)


def test_rows_before_the_migration_have_no_session_and_sessions_sum_apart() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        apply_migrations(db, [m for m in MIGRATIONS if m[0] < VERSION])
        columns = [c for c in usage._COLUMNS.split(", ") if c != "agent_session"]
        row = usage._to_row(make_usage(1))
        db.execute(
            f"INSERT INTO usage_records ({', '.join(columns)}) "
            f"VALUES ({', '.join(':' + c for c in columns)})",
            {c: row[c] for c in columns},
        )
        assert apply_migrations(db) == [v for v, _ in MIGRATIONS if v >= VERSION]
        (old,) = usage.list_for_request(db, "req_1")
        assert old.agent_session is None

        usage.insert_records(
            db,
            [
                make_usage(2, agent_session="a", cost_usd=0.25),
                make_usage(3, agent_session="a", cost_usd=0.5),
                make_usage(4, agent_session="b", cost_usd=2.0),
                make_usage(5, agent_session="a", key_id="key_b", cost_usd=9.0),
            ],
        )
        assert usage.list_for_request(db, "req_2")[0].agent_session == "a"
        assert agents.session_spent(db, "key_a", "a") == 0.75
        assert agents.session_spent(db, "key_a", "b") == 2.0
        assert agents.session_spent(db, "key_a", "c") == 0.0
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT coalesce(sum(cost_usd), 0) FROM usage_records "
            "WHERE key_id = ? AND agent_session = ?",
            ["key_a", "a"],
        ).fetchall()
        assert "usage_by_agent_session" in str(plan)
        names = {c.name for c in db.table("files").columns}
        assert {"agent_id", "agent_session"} <= names
    finally:
        db.close()
