"""The one SQLite connection of the gateway, and the only way to use it from trio.

SQLite allows one writer at a time, and a Python sqlite3 connection must not be used by
two threads at once. So the gateway holds a single connection and every access goes
through `Database.run`, which runs a synchronous function in a worker thread under a
`CapacityLimiter(1)`: accesses are serialised, the event loop never blocks on disk, and
the store's functions stay plain synchronous code that is easy to test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlite_utils
import trio

from store.connection import ImmediateDatabase, configure
from store.migrations import apply_migrations

T = TypeVar("T")

DB_FILENAME = "gateway.db"


class TransactionLeakError(RuntimeError):
    """A function given to `Database.run` returned with a transaction still open."""


class Database:
    """A migrated SQLite database, accessed one function at a time off the event loop."""

    def __init__(self, sqlite: sqlite_utils.Database) -> None:
        self._sqlite = sqlite
        self._limiter = trio.CapacityLimiter(1)

    async def run(self, fn: Callable[[sqlite_utils.Database], T]) -> T:
        """Run `fn(db)` in a worker thread, after every earlier call has finished.

        `fn` must not call `run` itself (it would wait for its own turn forever).

        Cancellation: while waiting for its turn, the call is cancelled at once and `fn`
        never runs. Once `fn` has started it runs to completion (SQLite work cannot be
        interrupted half-way) and its result is returned; the cancellation is then
        raised at the caller's next checkpoint. So a normal return means `fn` ran.
        """
        return await trio.to_thread.run_sync(
            self._call, fn, limiter=self._limiter, abandon_on_cancel=False
        )

    def _call(self, fn: Callable[[sqlite_utils.Database], T]) -> T:
        """Run `fn` and make sure it leaves no transaction open for the next caller."""
        conn = self._sqlite.conn
        try:
            result = fn(self._sqlite)
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        if conn.in_transaction:
            conn.rollback()
            raise TransactionLeakError(f"{fn!r} left a transaction open; it was rolled back")
        return result

    def run_sync(self, fn: Callable[[sqlite_utils.Database], T]) -> T:
        """Run `fn(db)` in the calling thread: for start-up code and tests, outside trio.

        Never call this from a trio task while `run` may be in use.
        """
        return self._call(fn)

    def close(self) -> None:
        """Close the connection. Call it after the last `run` has returned."""
        self._sqlite.close()


def open_database(data_dir: Path | None) -> Database:
    """Open (creating if needed) `<data_dir>/gateway.db` and bring its schema up to date.

    `data_dir=None` opens a private in-memory database, for tests. Blocking: call it at
    start-up, before the event loop serves requests, or through `trio.to_thread`.
    """
    if data_dir is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
    else:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(data_dir / DB_FILENAME, check_same_thread=False)
    try:
        sqlite = ImmediateDatabase(conn)
        configure(sqlite)
        apply_migrations(sqlite)
        # An erasure a crash cut short between its commit and its checkpoint left the
        # erased pages' old images in the WAL: truncate it before anything else runs.
        sqlite.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except BaseException:
        conn.close()
        raise
    return Database(sqlite)
