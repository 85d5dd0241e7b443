"""PostgreSQL as the store: the handle the store's functions get, and its connections.

Why psycopg 3's synchronous connections: the store's functions are synchronous code run
in a worker thread (`Database.run`), so a synchronous driver keeps every aggregate module
as it is for both backends, and trio never meets the driver (psycopg's async connections
are written for asyncio; under trio they would need an adapter). psycopg is the
maintained PostgreSQL driver for Python (libpq, binary wheels, `COPY`, pipelining), and
`psycopg_pool.ConnectionPool` bounds the connections.

Writers are serialised as SQLite serialises them: every outermost `atomic()` first takes
one transaction-scoped advisory lock (`WRITE_LOCK`), so a read-then-write inside a
transaction (a key's rotation, a latency sketch's merge, a name's uniqueness) sees no
other node's write in between, on any node. Reads take no lock and run side by side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import adapt, pq
from psycopg.rows import dict_row

from store.dialect import POSTGRES, Dialect
from store.pg_sql import placeholders

# pg_advisory_xact_lock key of the store's writers (any 64-bit number no one else uses:
# "gateway" in ASCII) and pg_advisory_lock key of the migrations.
WRITE_LOCK = 0x67617465776179
MIGRATION_LOCK = WRITE_LOCK + 1


class _IntegerBoolDumper(adapt.Dumper):
    """Python booleans as 0/1: the schema's flags are INTEGER columns (SQLite has no
    boolean), and PostgreSQL refuses a boolean for them."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _NumberLoader(adapt.Loader):
    """NUMERIC as int or float: `sum()` of an integer column is NUMERIC in PostgreSQL, an
    integer in SQLite; the store's code does arithmetic with floats, never Decimals."""

    def load(self, data: Any) -> int | float:
        text = bytes(data)
        if b"." in text or b"e" in text or b"N" in text:
            return float(text)
        return int(text)


def configure(conn: psycopg.Connection[Any]) -> None:
    """The adaptations every store connection uses (pool `configure` hook)."""
    conn.adapters.register_dumper(bool, _IntegerBoolDumper)
    conn.adapters.register_loader("numeric", _NumberLoader)


def connect(url: str) -> psycopg.Connection[Any]:
    """One autocommit connection (transactions are `atomic()` blocks), configured."""
    conn = psycopg.connect(url, autocommit=True)
    configure(conn)
    return conn


class _Raw:
    """`handle.conn`: `execute`/`executemany` with the store's placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    @property
    def in_transaction(self) -> bool:
        return self._conn.info.transaction_status != pq.TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Any = None) -> psycopg.Cursor[Any]:
        if parameters is None:
            return self._conn.execute(sql.encode())
        return self._conn.execute(placeholders(sql), parameters)

    def executemany(self, sql: str, seq_of_parameters: Any) -> psycopg.Cursor[Any]:
        cursor = self._conn.cursor()
        cursor.executemany(placeholders(sql), list(seq_of_parameters))
        return cursor


class PgHandle:
    """A store handle on one PostgreSQL connection: the calls `store.handle.Handle` names."""

    dialect: Dialect = POSTGRES

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.pg = conn
        self.conn = _Raw(conn)

    def execute(self, sql: str, parameters: Any = None) -> psycopg.Cursor[Any]:
        return self.conn.execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any) -> psycopg.Cursor[Any]:
        return self.conn.executemany(sql, seq_of_parameters)

    def executescript(self, sql: str) -> psycopg.Cursor[Any]:
        """Several statements at once (no parameters: sent as one simple query)."""
        return self.pg.execute(sql.encode())

    def query(self, sql: str, params: Any = None) -> Iterator[dict[str, Any]]:
        with self.pg.cursor(row_factory=dict_row) as cursor:
            if params is None:
                cursor.execute(sql.encode())
            else:
                cursor.execute(placeholders(sql), params)
            rows = cursor.fetchall() if cursor.description is not None else []
        yield from rows

    def copy_rows(self, table: str, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Rows into `table` through `COPY ... FROM STDIN`: one statement, one round trip
        of data, however many rows (the usage log's batches)."""
        statement = f"COPY {table} ({', '.join(names)}) FROM STDIN"
        with self.pg.cursor() as cursor, cursor.copy(statement.encode()) as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def atomic(self) -> Iterator[PgHandle]:
        """A transaction (a savepoint when nested). The outermost one takes the store's
        write lock first, released at its commit or rollback."""
        if self.conn.in_transaction:
            with self.pg.transaction():
                yield self
            return
        with self.pg.transaction():
            self.pg.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK])
            yield self

    def close(self) -> None:
        self.pg.close()
