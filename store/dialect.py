"""The SQL that differs between SQLite and PostgreSQL, one construct at a time, in one place.

Most of the store's SQL is written once in a form both accept: `ON CONFLICT ... DO
UPDATE/NOTHING` instead of `INSERT OR REPLACE/IGNORE`, `count(*) FILTER (WHERE ...)`
instead of `sum(<comparison>)`, `RETURNING` instead of `lastrowid`, `"end"` quoted, a
`rowid` column on PostgreSQL where SQLite's implicit one is read (the migrations'
PostgreSQL form adds it). What cannot be written once is a method here: dates from epoch
seconds, JSON lists and paths, full-text search. A store function asks `of(db)` for its
handle's dialect.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from store import columns

Name = Literal["sqlite", "postgres"]


@attrs.frozen
class Dialect:
    """The per-backend spelling of the constructs that have no common form."""

    name: Name

    @property
    def is_postgres(self) -> bool:
        return self.name == "postgres"

    def date_of(self, epoch: str) -> str:
        """`YYYY-MM-DD` (UTC) of an epoch-seconds expression."""
        if self.is_postgres:
            return f"to_char(to_timestamp({epoch}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
        return f"date({epoch}, 'unixepoch')"

    def week_of(self, epoch: str) -> str:
        """`YYYY-MM-DD` of the Monday (UTC) starting the week of an epoch expression."""
        if self.is_postgres:
            return (
                f"to_char(date_trunc('week', to_timestamp({epoch}) AT TIME ZONE 'UTC'), "
                "'YYYY-MM-DD')"
            )
        return f"date({epoch}, 'unixepoch', '-6 days', 'weekday 1')"

    def month_of(self, epoch: str) -> str:
        """`YYYY-MM-01` (UTC) of an epoch-seconds expression."""
        if self.is_postgres:
            return f"to_char(to_timestamp({epoch}) AT TIME ZONE 'UTC', 'YYYY-MM-01')"
        return f"strftime('%Y-%m-01', {epoch}, 'unixepoch')"

    def floor_int(self, number: str) -> str:
        """The integer part of a non-negative number (a time bucket's index): SQLite's
        CAST truncates, PostgreSQL's rounds."""
        if self.is_postgres:
            return f"CAST(floor({number}) AS BIGINT)"
        return f"CAST({number} AS INTEGER)"

    def in_list(self, column: str) -> str:
        """`column` is one of a list given as one parameter (`list_param`): one statement
        whatever the list's length (SQLite's variable limit, PostgreSQL's plan cache)."""
        if self.is_postgres:
            return f"{column} = ANY(?)"
        return f"{column} IN (SELECT value FROM json_each(?))"

    def list_param(self, values: Sequence[Any]) -> Any:
        return list(values) if self.is_postgres else columns.to_json(list(values))

    def json_member_text(self, column: str) -> str:
        """A JSON object column's member (one `json_path` parameter) as the text a query
        string carries: numbers as written, booleans `true`/`false`, strings unquoted."""
        if self.is_postgres:
            return f"(CAST({column} AS jsonb) #>> ?)"
        # json_extract gives a number as INTEGER or REAL (never equal to the TEXT '3') and a
        # boolean as 1 or 0: numbers are cast, booleans spelled as in the client's JSON.
        return (
            f"CASE json_type({column}, ?) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            f"ELSE CAST(json_extract({column}, ?) AS TEXT) END"
        )

    def json_path(self, key: str) -> list[Any]:
        """The parameters of `json_member_text` for one top-level member `key`."""
        if self.is_postgres:
            return [[key]]
        path = '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return [path, path]


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgres")


def of(db: object) -> Dialect:
    """The dialect of a handle: PostgreSQL handles say so (`dialect`), the rest is SQLite
    (a sqlite-utils `Database` of any class)."""
    dialect = getattr(db, "dialect", SQLITE)
    return dialect if isinstance(dialect, Dialect) else SQLITE


_FTS_TERM = re.compile(r'"((?:[^"]|"")*)"')


def fts_terms(match: str) -> list[str]:
    """The quoted terms of an FTS5 `"a" OR "b"` expression (`gateway.documents.search`)."""
    return [term.replace('""', '"') for term in _FTS_TERM.findall(match)]
