"""The gateway's SQLite connection: its class and its settings, without trio.

`store.db` opens the gateway's own connection with these; the usage writer's process
(`gateway.workers.usage_child`) opens its second connection to the same file with
`store.sqlite_handle.open_existing`, on the bare `sqlite3` module, with the same
settings (`PRAGMAS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlite_utils

from store.sqlite_handle import PRAGMAS


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
    for pragma in PRAGMAS:
        sqlite.execute(pragma)
