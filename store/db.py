"""The one SQLite connection of the gateway, and the only way to use it from trio.

SQLite allows one writer at a time, and a Python sqlite3 connection must not be used by
two threads at once. So the gateway holds a single connection and every access goes
through `Database.run`, which runs a synchronous function in a worker thread under a
`CapacityLimiter(1)`: accesses are serialised, the event loop never blocks on disk, and
the store's functions stay plain synchronous code that is easy to test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import sqlite_utils
import trio

from store.migrations import apply_migrations

T = TypeVar("T")

DB_FILENAME = "gateway.db"
BUSY_TIMEOUT_MS = 5000


class ImmediateDatabase(sqlite_utils.Database):
    """`atomic()` takes the write lock when it begins (`BEGIN IMMEDIATE`).

    Why: the usage writer's process (and the other workers of `--workers N`) write the
    same file through connections of their own. A deferred transaction that reads first
    (sqlite-utils reads the table's schema before an insert) and then writes fails at
    once with "database is locked" if another connection committed in between: its
    snapshot is stale, and SQLite does not wait (the busy timeout does not apply). Taking
    the lock first makes it wait its turn under the busy timeout instead.
    """

    @contextmanager
    def atomic(self) -> Iterator[sqlite_utils.Database]:
        if self.conn.in_transaction:  # nested: sqlite-utils' savepoint
            with super().atomic():
                yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise


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
        _configure(sqlite)
        apply_migrations(sqlite)
    except BaseException:
        conn.close()
        raise
    return Database(sqlite)


def open_existing(path: Path) -> sqlite_utils.Database:
    """A second connection to a gateway database another process opened (and migrated):
    the usage writer's own process. Same settings as `open_database`'s, no migrations."""
    conn = sqlite3.connect(path)
    try:
        sqlite = ImmediateDatabase(conn)
        _configure(sqlite)
    except BaseException:
        conn.close()
        raise
    return sqlite


def _configure(sqlite: sqlite_utils.Database) -> None:
    """Connection settings; PRAGMAs that must run outside any transaction.

    WAL lets readers (other processes, backups) work while the gateway writes.

    synchronous=FULL: every commit fsyncs the WAL before it returns, so a change whose
    answer was sent survives a power loss or an OS crash, not only a killed process.
    (NORMAL in WAL mode survives `kill -9`, since the WAL is written before the commit
    returns, but a power loss can take the last commits back: a key the client was told
    exists could vanish.) The price is one fsync per commit; the hot path does not
    commit per request (the usage log and `last_used` commit in groups), so it is small.
    """
    sqlite.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    sqlite.execute("PRAGMA foreign_keys = ON")
    sqlite.enable_wal()
    sqlite.execute("PRAGMA synchronous = FULL")
