"""The gateway's SQLite connections: their class and their settings, without trio.

`store.db` opens the gateway's own connection with these; the usage writer's process
(`gateway.workers.usage_child`) opens its second connection to the same file with
`open_existing`, importing only this module, not trio (about 13 MiB less resident).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

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


def open_existing(path: Path) -> sqlite_utils.Database:
    """A second connection to a gateway database another process opened (and migrated):
    the usage writer's own process. Same settings as `open_database`'s, no migrations."""
    conn = sqlite3.connect(path)
    try:
        sqlite = ImmediateDatabase(conn)
        configure(sqlite)
    except BaseException:
        conn.close()
        raise
    return sqlite


def configure(sqlite: sqlite_utils.Database) -> None:
    """Connection settings; PRAGMAs that must run outside any transaction.

    WAL lets readers (other processes, backups) work while the gateway writes.

    synchronous=FULL: every commit fsyncs the WAL before it returns, so a change whose
    answer was sent survives a power loss or an OS crash, not only a killed process.
    (NORMAL in WAL mode survives `kill -9`, since the WAL is written before the commit
    returns, but a power loss can take the last commits back: a key the client was told
    exists could vanish.) The price is one fsync per commit; the hot path does not
    commit per request (the usage log and `last_used` commit in groups), so it is small.

    secure_delete=ON: space freed by a DELETE or by an UPDATE rewriting a row is
    overwritten with zeros, so erased content (`store.erasure`) leaves no copy in the
    file's pages, including older versions of a row that was updated before it was erased.
    """
    sqlite.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    sqlite.execute("PRAGMA secure_delete = ON")
    sqlite.execute("PRAGMA foreign_keys = ON")
    sqlite.enable_wal()
    sqlite.execute("PRAGMA synchronous = FULL")
