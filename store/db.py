"""The gateway's database, and the only way to use it from trio: `Database.run`.

Two backends answer the same interface: the embedded SQLite file (the default) and
PostgreSQL (`GATEWAY_DATABASE_URL=postgresql://...`), which several gateway nodes share.
Either way the store's functions stay plain synchronous code taking a handle
(`store.handle.Handle`), run in a worker thread so the event loop never blocks on the
database; the backend is chosen here, at construction, and nowhere else.

SQLite allows one writer at a time, and a Python sqlite3 connection must not be used by
two threads at once: the gateway holds a single connection and `run` passes a
`CapacityLimiter(1)`. PostgreSQL (`store.postgres`) lends each call a connection of a
bounded pool, with a limiter of the pool's size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils
import trio

from store.connection import ImmediateDatabase, configure
from store.migrations import apply_migrations

T = TypeVar("T")

DB_FILENAME = "gateway.db"

# A function of the store run on a handle. Typed `Any` in its argument because the
# gateway's callables were written against sqlite-utils' `Database`; every handle
# answers what the store's functions use (`store.handle.Handle`).
Work = Callable[[Any], T]


class TransactionLeakError(RuntimeError):
    """A function given to `Database.run` returned with a transaction still open."""


class Database:
    """A migrated database, accessed off the event loop one function at a time per handle.

    `run(fn)` runs `fn(handle)` in a worker thread. `fn` must not call `run` itself (it
    could wait for its own turn forever).

    Cancellation: while waiting for its turn, the call is cancelled at once and `fn`
    never runs. Once `fn` has started it runs to completion (database work cannot be
    interrupted half-way) and its result is returned; the cancellation is then raised at
    the caller's next checkpoint. So a normal return means `fn` ran.
    """

    backend = "sqlite"

    def __init__(self, sqlite: sqlite_utils.Database) -> None:
        self._sqlite = sqlite
        self._limiter = trio.CapacityLimiter(1)

    async def run(self, fn: Work[T]) -> T:
        return await trio.to_thread.run_sync(
            self.run_sync, fn, limiter=self._limiter, abandon_on_cancel=False
        )

    def run_sync(self, fn: Work[T]) -> T:
        """Run `fn(handle)` in the calling thread: for start-up code and tests, outside
        trio. Never call this from a trio task while `run` may be in use."""
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

    def close(self) -> None:
        """Close the connection. Call it after the last `run` has returned."""
        self._sqlite.close()


def open_database(data_dir: Path | None, url: str | None = None) -> Database:
    """The gateway's database, its schema brought up to date.

    With a PostgreSQL `url`, a pool of connections to that server (`store.postgres_db`);
    otherwise `<data_dir>/gateway.db`, created if needed, or with `data_dir=None` a
    private in-memory SQLite database, for tests. Blocking: call it at start-up, before
    the event loop serves requests, or through `trio.to_thread`.
    """
    if url is not None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValueError("the database URL must be a postgresql:// URL")
        try:
            from store.postgres_db import open_postgres
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                f"a PostgreSQL store needs {exc.name}, of the [postgres] extra: "
                "pip install 'ai-gateway[postgres]'",
                name=exc.name,
            ) from exc
        return open_postgres(url)
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
