"""The gateway's database on PostgreSQL: a bounded pool, each call in a thread.

`PostgresDatabase.run` answers as `store.db.Database.run` does (same cancellation
contract), but lends `fn` a connection of a `psycopg_pool.ConnectionPool` of `POOL_SIZE`
connections, in a worker thread under a `CapacityLimiter` of the same size: no thread
ever waits inside the pool, and at most `POOL_SIZE` calls of one node run at once.

Migrations run once, by whichever node starts first: `open_postgres` holds a session
advisory lock (`MIGRATION_LOCK`) while it applies what is missing, so a second node
starting at the same moment waits, then finds the versions applied and applies nothing.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg
import trio
from psycopg import pq
from psycopg_pool import ConnectionPool

from store.db import Database, TransactionLeakError, Work
from store.migrations import apply_migrations
from store.postgres import MIGRATION_LOCK, PgHandle, configure, connect

T = TypeVar("T")

POOL_SIZE = 8
# How long a call may wait for a free connection before it is an error (the limiter
# makes that wait happen before the thread starts; this is the pool's own bound).
POOL_TIMEOUT_S = 30.0


class PostgresDatabase(Database):
    """A migrated PostgreSQL database, `run` calls served by a bounded pool."""

    backend = "postgres"

    def __init__(self, url: str, *, size: int = POOL_SIZE) -> None:
        self.url = url
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=size,
            kwargs={"autocommit": True},
            configure=configure,
            check=ConnectionPool.check_connection,
            timeout=POOL_TIMEOUT_S,
            open=True,
            name="gateway-store",
        )
        self._limiter = trio.CapacityLimiter(size)

    async def run(self, fn: Work[T]) -> T:
        return await trio.to_thread.run_sync(
            self.run_sync, fn, limiter=self._limiter, abandon_on_cancel=False
        )

    def run_sync(self, fn: Work[T]) -> T:
        with self._pool.connection() as conn:
            return _call(conn, fn)

    def close(self) -> None:
        self._pool.close()


def _call(conn: psycopg.Connection[Any], fn: Work[T]) -> T:
    """`fn` on the connection; no transaction survives it (the pool would roll it back,
    but a function that leaves one open is a bug worth an error, as on SQLite)."""
    result = fn(PgHandle(conn))
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        conn.rollback()
        raise TransactionLeakError(f"{fn!r} left a transaction open; it was rolled back")
    return result


def migrate(url: str) -> list[int]:
    """Apply the missing migrations under the migration lock; the versions applied now."""
    with connect(url) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
        try:
            return apply_migrations(PgHandle(conn))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])


def open_postgres(url: str, *, size: int = POOL_SIZE) -> PostgresDatabase:
    """Migrate (once across nodes), then open the pool. Blocking, like `open_database`."""
    migrate(url)
    return PostgresDatabase(url, size=size)
