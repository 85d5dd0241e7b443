"""A second connection to the gateway's SQLite file on the bare `sqlite3` module: the
usage writer's child (`gateway.workers.usage_child`) writes through it.

Why not sqlite-utils' `Database`, as the gateway's own connection is: the child writes
with the store's SQL through the `Handle` calls alone (`execute`, `executemany` on the
connection, `query`, `atomic`), and importing sqlite-utils brings dateutil, click,
pluggy, importlib.metadata and email along: ~8 MiB of the child's resident memory and
most of its start-up. `PRAGMAS` are the settings every gateway connection takes
(`store.connection.configure` runs them on the gateway's own).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_MS = 5000

# In order; outside any transaction. Why each: `store.connection.configure`.
PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA secure_delete = ON",
    "PRAGMA foreign_keys = ON",
    "PRAGMA journal_mode = wal",
    "PRAGMA synchronous = FULL",
)

_savepoints = itertools.count()


class SqliteHandle:
    """A `store.handle.Handle` on a plain `sqlite3` connection in autocommit mode;
    `atomic()` takes the write lock when it begins (`BEGIN IMMEDIATE`, for the reason
    `store.connection.ImmediateDatabase` gives) and nests as a savepoint."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, () if parameters is None else parameters)

    def executescript(self, sql: str) -> sqlite3.Cursor:
        return self.conn.executescript(sql)

    def query(self, sql: str, params: Any = None) -> Iterator[dict[str, Any]]:
        cursor = self.execute(sql, params)
        names = [column[0] for column in cursor.description]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    @contextmanager
    def atomic(self) -> Iterator[SqliteHandle]:
        begin, commit, rollback = "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"
        if self.conn.in_transaction:
            name = f"atomic_{next(_savepoints)}"
            begin, commit = f"SAVEPOINT {name}", f"RELEASE {name}"
            rollback = f"ROLLBACK TO {name}; RELEASE {name}"
        self.conn.execute(begin)
        try:
            yield self
        except BaseException:
            for statement in rollback.split("; "):
                self.conn.execute(statement)
            raise
        self.conn.execute(commit)

    def close(self) -> None:
        self.conn.close()


def open_existing(path: Path) -> SqliteHandle:
    """A second connection to a gateway database another process opened (and migrated):
    the usage writer's own process. Same settings as `store.db.open_database`'s, no
    migrations."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in PRAGMAS:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return SqliteHandle(conn)
