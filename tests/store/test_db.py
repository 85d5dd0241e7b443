from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils
import trio
import trio.testing

from store.db import DB_FILENAME, Database, TransactionLeakError, open_database
from store.migrations import MIGRATIONS, SchemaTooNewError, apply_migrations, current_version

_INSERT_W = (
    "INSERT INTO workspaces (id, name, description, created_at) VALUES ('w', 'W', '', 'now')"
)


def _pragma(db: Database, name: str) -> object:
    return db.run_sync(lambda d: d.execute(f"PRAGMA {name}").fetchone()[0])


def test_open_creates_schema_and_default_workspace(tmp_path: Path) -> None:
    db = open_database(tmp_path / "data")
    try:
        assert (tmp_path / "data" / DB_FILENAME).exists()
        names = set(db.run_sync(lambda d: d.table_names()))
        assert {"workspaces", "api_keys", "providers", "usage_records", "audit_events"} <= names
        ids = db.run_sync(lambda d: [r["id"] for r in d.query("SELECT id FROM workspaces")])
        assert ids == ["default"]
    finally:
        db.close()


def test_migrations_are_idempotent_on_reopen(tmp_path: Path) -> None:
    open_database(tmp_path).close()
    db = open_database(tmp_path)
    try:
        assert db.run_sync(apply_migrations) == []
        assert db.run_sync(current_version) == MIGRATIONS[-1][0]
        rows = db.run_sync(lambda d: d.execute("SELECT count(*) FROM schema_migrations").fetchone())
        assert rows[0] == len(MIGRATIONS)
        defaults = db.run_sync(lambda d: d.execute("SELECT count(*) FROM workspaces").fetchone())
        assert defaults[0] == 1
    finally:
        db.close()


def test_connection_pragmas(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    try:
        assert _pragma(db, "journal_mode") == "wal"
        assert _pragma(db, "foreign_keys") == 1
        assert _pragma(db, "synchronous") == 2  # FULL: a commit survives a power loss
        assert _pragma(db, "busy_timeout") == 5000
    finally:
        db.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    db.run_sync(lambda d: d.execute("INSERT INTO schema_migrations VALUES (99, 'x')"))
    db.close()
    with pytest.raises(SchemaTooNewError):
        open_database(tmp_path)


def test_migrations_must_be_numbered_in_order() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    with pytest.raises(ValueError, match="in order"):
        apply_migrations(db, ((2, "SELECT 1"),))


def test_a_migration_landing_after_a_higher_one_is_still_applied() -> None:
    """Versions are handed out to changes made side by side: v3 may land before v2. A
    database migrated to v3 then gets v2 (the old rule, 'everything above the highest
    applied', would have skipped it for good, and refused the gap outright)."""
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db, ((1, "CREATE TABLE a (x)"), (3, "CREATE TABLE c (x)")))
    applied = apply_migrations(
        db, ((1, "CREATE TABLE a (x)"), (2, "CREATE TABLE b (x)"), (3, "CREATE TABLE c (x)"))
    )
    assert applied == [2]
    assert {"a", "b", "c"} <= set(db.table_names())
    assert current_version(db) == 3


def test_failed_migration_leaves_previous_version(tmp_path: Path) -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db, ((1, "CREATE TABLE a (x)"),))
    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(db, ((1, "CREATE TABLE a (x)"), (2, "CREATE TABLE b (x); BOGUS")))
    assert current_version(db) == 1
    assert "b" not in db.table_names()


async def test_run_returns_the_result(database: Database) -> None:
    assert await database.run(lambda d: d.execute("SELECT 40 + 2").fetchone()[0]) == 42


async def test_run_rolls_back_a_leaked_transaction(database: Database) -> None:
    def leak(d: sqlite_utils.Database) -> None:
        d.conn.execute(_INSERT_W)

    with pytest.raises(TransactionLeakError):
        await database.run(leak)
    count = await database.run(lambda d: d.execute("SELECT count(*) FROM workspaces").fetchone())
    assert count[0] == 1


async def test_run_rolls_back_when_fn_raises(database: Database) -> None:
    def fail(d: sqlite_utils.Database) -> None:
        d.conn.execute(_INSERT_W)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await database.run(fail)
    count = await database.run(lambda d: d.execute("SELECT count(*) FROM workspaces").fetchone())
    assert count[0] == 1


async def test_runs_are_serialised(database: Database) -> None:
    lock = threading.Lock()
    active = [0]
    peak = [0]

    def work(d: sqlite_utils.Database) -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.002)
        with lock:
            active[0] -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(database.run, work)
    assert peak[0] == 1


async def test_cancelled_while_waiting_for_its_turn_never_runs(database: Database) -> None:
    release = threading.Event()
    ran: list[str] = []
    outcome: list[str] = []

    def block(d: sqlite_utils.Database) -> None:
        release.wait()

    def second(d: sqlite_utils.Database) -> None:
        ran.append("second")

    async def second_caller(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            await database.run(second)
        outcome.append("cancelled" if scope.cancelled_caught else "returned")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(database.run, block)
        await trio.testing.wait_all_tasks_blocked()
        scope = await nursery.start(second_caller)
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
    assert outcome == ["cancelled"]
    assert ran == []


async def test_started_fn_completes_despite_cancellation(database: Database) -> None:
    started = threading.Event()
    release = threading.Event()

    def write(d: sqlite_utils.Database) -> str:
        started.set()
        release.wait()
        d.execute(_INSERT_W)
        return "done"

    results: list[str] = []
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                results.append(await database.run(write))

            nursery.start_soon(call)
            await trio.to_thread.run_sync(started.wait)
            scope.cancel()
            release.set()
    assert results == ["done"]
    count = await database.run(lambda d: d.execute("SELECT count(*) FROM workspaces").fetchone())
    assert count[0] == 2
