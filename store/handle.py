"""What the store's functions are given: a `Handle` on the database, whatever its backend.

Every aggregate module is plain synchronous code taking a handle: a sqlite-utils
`Database` (the embedded SQLite file) or a `store.postgres.PgHandle` (a PostgreSQL
connection from the pool). Both answer the few calls below, with `?` and `:name`
placeholders and rows as tuples (`execute`) or dicts (`query`); SQL that differs between
the two is asked of `store.dialect.of(db)`, in one place per construct.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol


class Cursor(Protocol):
    """The part of a DB-API cursor the store reads."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Handle(Protocol):
    """A database the store's functions read and write, one caller at a time."""

    @property
    def conn(self) -> Any:
        """The raw connection: `execute` and `executemany` with the same placeholders
        (sqlite3's own, or `store.postgres`'s for psycopg)."""

    def execute(self, sql: str, parameters: Any = None) -> Cursor: ...

    def executescript(self, sql: str) -> Any: ...

    def query(self, sql: str, params: Any = None) -> Iterator[dict[str, Any]]: ...

    def atomic(self) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...
